"""Transformer modules: MultiHeadAttention and an encoder layer against PyTorch (live where
torch is installed, from fixtures/transformer_reference.json everywhere), masks, quiet softmax,
pre/post norm, the autoregressive cache against a full causal forward, positional and rotary
encodings against their formulas, configs, printing, records and errors."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pyrite
from pyrite.errors import ConfigError, KindError, ShapeError
from pyrite.module import Module, Param
from pyrite.nn import (
    Linear,
    MhaInput,
    MultiHeadAttention,
    MultiHeadAttentionConfig,
    PositionalEncodingConfig,
    RotaryEncodingConfig,
    TransformerDecoderConfig,
    TransformerDecoderInput,
    TransformerEncoderConfig,
    TransformerEncoderInput,
    generate_autoregressive_mask,
    generate_padding_mask,
)
from pyrite.nn import functional as F

F64 = "numpy"
FIXTURE = Path(__file__).parent / "fixtures" / "transformer_reference.json"
CASES = json.loads(FIXTURE.read_text())["cases"]


def _t(a: Any, device: Any = F64) -> pyrite.Tensor:
    return pyrite.tensor(np.asarray(a, dtype=np.float64), device=device)


def _b(a: Any, device: Any = F64) -> pyrite.Tensor:
    return pyrite.tensor(np.asarray(a, dtype=bool), device=device)


def _f64(module: Module) -> Module:
    return module.map(lambda _, p: p.with_val(p.val.cast("f64")))


# ---- torch layout -> pyrite ---------------------------------------------------------------------
def _linear(w: Any, b: Any, device: Any = F64) -> Linear:
    """torch's (d_out, d_in) weight is Burn's (d_in, d_out) transposed."""
    return Linear(Param(_t(np.asarray(w).T, device)), Param(_t(b, device)))


def mha_from_torch(params: dict[str, Any], prefix: str = "", n_heads: int = 2,
                   device: Any = F64) -> MultiHeadAttention:
    w, b = np.asarray(params[prefix + "in_proj_weight"]), np.asarray(params[prefix +
                                                                             "in_proj_bias"])
    d = w.shape[1]
    mha = MultiHeadAttentionConfig(d, n_heads, dropout=0.0).init(device)
    mha.query, mha.key, mha.value = (_linear(w[i * d:(i + 1) * d], b[i * d:(i + 1) * d], device)
                                     for i in range(3))
    mha.output = _linear(params[prefix + "out_proj.weight"], params[prefix + "out_proj.bias"],
                         device)
    return mha


def encoder_from_torch(case: dict[str, Any], device: Any = F64) -> Any:
    p = case["params"]
    d = np.asarray(p["linear1.weight"]).shape[1]
    d_ff = np.asarray(p["linear1.weight"]).shape[0]
    enc = TransformerEncoderConfig(d, d_ff, 2, 1, dropout=0.0, norm_first=case["norm_first"],
                                   activation=case["activation"]).init(device)
    layer = enc.layers[0]
    layer.mha = mha_from_torch(p, "self_attn.", device=device)
    layer.pwff.linear_inner = _linear(p["linear1.weight"], p["linear1.bias"], device)
    layer.pwff.linear_outer = _linear(p["linear2.weight"], p["linear2.bias"], device)
    # Burn's norm_2 wraps the attention in pre-norm and ends the layer in post-norm
    first, second = ("norm_2", "norm_1") if case["norm_first"] else ("norm_1", "norm_2")
    for ours, theirs in ((first, "norm1"), (second, "norm2")):
        norm = getattr(layer, ours)
        norm.gamma = Param(_t(p[theirs + ".weight"], device))
        norm.beta = Param(_t(p[theirs + ".bias"], device))
    return enc


def run_case(case: dict[str, Any], device: Any = F64) -> dict[str, Any]:
    if case["kind"] == "mha":
        mha = mha_from_torch(case["params"], device=device)
        kv = _t(case["key"], device)
        batch, seq_q = np.asarray(case["query"]).shape[:2]
        attn = np.broadcast_to(np.asarray(case["mask_attn"]), (batch, seq_q, kv.shape[1]))
        out = mha(MhaInput.cross_attn(_t(case["query"], device), kv, kv)
                  .mask_pad(_b(case["mask_pad"], device)).mask_attn(_b(attn, device)))
        return {"context": out.context.numpy(), "weights": out.weights.numpy()}
    enc = encoder_from_torch(case, device)
    x = _t(case["x"], device)
    mask = generate_autoregressive_mask(x.shape[0], x.shape[1], device)
    return {"output": enc(TransformerEncoderInput(x).mask_attn(mask)).numpy()}


def _id(case: dict[str, Any]) -> str:
    return case["kind"] + ("" if case["kind"] == "mha" else
                           f"-{'pre' if case['norm_first'] else 'post'}-{case['activation']}")


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_matches_committed_torch_values(case: dict[str, Any]) -> None:
    got = run_case(case)
    for key, value in got.items():
        np.testing.assert_allclose(value, case[key], atol=1e-10, err_msg=key)


@pytest.mark.parametrize("norm_first, activation", [(False, "gelu"), (True, "relu"),
                                                    (False, "relu")])
def test_matches_torch_live(norm_first: bool, activation: str) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation,
                                             batch_first=True, norm_first=norm_first).eval()
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(torch.tensor(rng.normal(scale=0.5, size=p.shape), dtype=torch.float32))
    params = {k: v.detach().double().numpy() for k, v in layer.named_parameters()}
    x = rng.normal(size=(2, 5, 8)).astype(np.float32)
    pad = np.array([[False] * 5, [False, False, False, True, True]])
    with torch.no_grad():
        want = layer(torch.tensor(x), src_key_padding_mask=torch.tensor(pad)).numpy()
    enc = encoder_from_torch({"params": params, "norm_first": norm_first,
                              "activation": activation})
    enc = enc.map(lambda _, p: p.with_val(p.val.cast("f32")))
    got = enc(TransformerEncoderInput(pyrite.tensor(x)).mask_pad(pyrite.tensor(pad))).numpy()
    keep = ~pad  # torch's fast path zeroes padded rows' outputs; compare the real positions
    np.testing.assert_allclose(got[keep], want[keep], atol=1e-5)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True).eval()
    ctx, w = mha(torch.tensor(x), torch.tensor(x), torch.tensor(x),
                 key_padding_mask=torch.tensor(pad), average_attn_weights=False)
    ours = mha_from_torch({k: v.detach().double().numpy() for k, v in mha.named_parameters()})
    out = ours(MhaInput.self_attn(_t(x)).mask_pad(_b(pad)))
    np.testing.assert_allclose(out.context.numpy(), ctx.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(out.weights.numpy(), w.detach().numpy(), atol=1e-5)


# ---- attention behaviour ------------------------------------------------------------------------
def test_shapes_self_and_cross() -> None:
    mha = MultiHeadAttentionConfig(12, 3).init()
    out = mha(MhaInput.cross_attn(pyrite.ones((2, 4, 12)), pyrite.ones((2, 6, 12)),
                                  pyrite.ones((2, 6, 12))))
    assert out.context.shape == (2, 4, 12) and out.weights.shape == (2, 3, 4, 6)
    np.testing.assert_allclose(out.weights.numpy().sum(-1), 1.0, rtol=1e-6)


def test_padded_key_gets_zero_weight_and_does_not_change_the_rest() -> None:
    rng = np.random.default_rng(0)
    mha = MultiHeadAttentionConfig(8, 2).init()
    x = rng.normal(size=(2, 5, 8)).astype(np.float32)
    pad = np.zeros((2, 5), dtype=bool)
    pad[:, 3:] = True
    y = x.copy()
    y[:, 3:] = rng.normal(size=(2, 2, 8))  # change only the padded positions
    outs = [mha(MhaInput.self_attn(pyrite.tensor(v)).mask_pad(pyrite.tensor(pad)))
            for v in (x, y)]
    assert np.abs(outs[0].weights.numpy()[..., 3:]).max() < 1e-30
    np.testing.assert_allclose(outs[0].context.numpy()[:, :3], outs[1].context.numpy()[:, :3],
                               atol=1e-6)


def test_causal_mask_hides_later_keys() -> None:
    mask = generate_autoregressive_mask(2, 4)
    assert mask.shape == (2, 4, 4)
    assert mask.int().to_list()[1] == [[0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1], [0, 0, 0, 0]]
    mha = MultiHeadAttentionConfig(8, 2).init()
    w = mha(MhaInput.self_attn(pyrite.ones((2, 4, 8)) * 0.3).mask_attn(mask)).weights.numpy()
    assert np.abs(w * mask.numpy()[:, None]).max() < 1e-30
    np.testing.assert_allclose(w[0, 0, 2], [1 / 3] * 3 + [0.0], atol=1e-6)


@pytest.mark.parametrize("device", ["numpy", "webgpu"])
def test_causal_flag_equals_the_autoregressive_mask(device: str) -> None:
    """`.causal()` (the attention op's causal flag, no mask tensor) gives what the Bool
    autoregressive mask gives: MultiHeadAttention's context and weights, a whole encoder."""
    dev = _device_or_skip(device)
    rng = np.random.default_rng(11)
    x = pyrite.tensor(rng.normal(size=(2, 7, 8)).astype(np.float32), device=dev)
    mask = generate_autoregressive_mask(2, 7, dev)
    mha = MultiHeadAttentionConfig(8, 2).init(dev)
    want, got = (mha(MhaInput.self_attn(x).mask_attn(mask)), mha(MhaInput.self_attn(x).causal()))
    assert MhaInput.self_attn(x).causal().is_causal and not MhaInput.self_attn(x).is_causal
    np.testing.assert_allclose(got.context.numpy(), want.context.numpy(), atol=1e-6)
    np.testing.assert_allclose(got.weights.numpy(), want.weights.numpy(), atol=1e-6)
    enc = TransformerEncoderConfig(8, 16, 2, 2, norm_first=True).init(dev)
    np.testing.assert_allclose(enc(TransformerEncoderInput(x).causal()).numpy(),
                               enc(TransformerEncoderInput(x).mask_attn(mask)).numpy(),
                               atol=1e-5)


def _device_or_skip(name: str) -> pyrite.Backend:
    try:
        dev = pyrite.device(name)
        pyrite.zeros((1,), device=dev).numpy()
    except pyrite.BackendUnavailable as exc:
        pytest.skip(f"{name} unavailable: {exc}")
    return dev


def test_padding_mask_generation() -> None:
    out = generate_padding_mask(0, [[3, 3, 3], [3, 3, 3, 4, 10, 15]], None)
    assert out.mask.int().to_list() == [[0, 0, 0, 1, 1, 1], [0] * 6]
    cut = generate_padding_mask(9, [[1, 2, 3, 4], [5]], 3)
    assert cut.tensor.to_list() == [[1, 2, 3], [5, 9, 9]]


def test_quiet_softmax_values() -> None:
    rng = np.random.default_rng(1)
    q, k, v = (rng.normal(size=(1, 2, 3, 4)) for _ in range(3))
    scores = q @ k.swapaxes(-1, -2) * 0.5
    want = np.exp(scores) / (1.0 + np.exp(scores).sum(-1, keepdims=True))
    got = F.attention_weights(_t(q), _t(k), scale=0.5, quiet=True).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(F.attention(_t(q), _t(k), _t(v), scale=0.5, quiet=True).numpy(),
                               want @ v, rtol=1e-12)
    # stable where the plain formula overflows, and all-small rows give all-small weights
    big = F.attention_weights(_t(q * 1e3), _t(k), quiet=True).numpy()
    assert np.isfinite(big).all() and (big.sum(-1) <= 1 + 1e-12).all()
    masked = F.attention_weights(_t(q), _t(k), _t(np.full((1, 1, 1, 3), -1e4)), quiet=True)
    assert np.abs(masked.numpy()).max() < 1e-30
    mha = MultiHeadAttentionConfig(8, 2, quiet_softmax=True).init()
    assert (mha(MhaInput.self_attn(pyrite.ones((1, 3, 8)))).weights.numpy().sum(-1) < 1).all()


def test_dropout_on_weights_only_while_training() -> None:
    mha = MultiHeadAttentionConfig(8, 2, dropout=0.5).init("autodiff<numpy>")
    x = pyrite.ones((1, 6, 8), device="autodiff<numpy>")
    a, b = (mha(MhaInput.self_attn(x)).context.numpy() for _ in range(2))
    assert not np.allclose(a, b)  # a fresh mask per call
    valid = mha.valid()
    xv = pyrite.ones((1, 6, 8))
    np.testing.assert_array_equal(valid(MhaInput.self_attn(xv)).context.numpy(),
                                  valid(MhaInput.self_attn(xv)).context.numpy())


# ---- encoder / decoder --------------------------------------------------------------------------
@pytest.mark.parametrize("norm_first", [False, True])
def test_pre_and_post_norm_differ_as_defined(norm_first: bool) -> None:
    pyrite.seed(3, device="numpy")
    enc = _f64(TransformerEncoderConfig(8, 16, 2, 1, dropout=0.0, norm_first=norm_first).init())
    layer = enc.layers[0]
    x = _t(np.random.default_rng(2).normal(size=(2, 3, 8)))
    attn = layer.mha(MhaInput.self_attn(layer.norm_2(x) if norm_first else x)).context
    if norm_first:
        h = x + attn
        want = h + layer.pwff(layer.norm_1(h))
    else:
        h = layer.norm_1(x + attn)
        want = layer.norm_2(h + layer.pwff(h))
    np.testing.assert_allclose(enc(TransformerEncoderInput(x)).numpy(), want.numpy(), atol=1e-12)
    out = enc(TransformerEncoderInput(x)).numpy()
    if not norm_first:  # post-norm ends in a LayerNorm: zero mean per position
        np.testing.assert_allclose(out.mean(-1), 0.0, atol=1e-9)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_cache_equals_full_causal_forward(norm_first: bool) -> None:
    enc = TransformerEncoderConfig(12, 24, 3, 3, norm_first=norm_first,
                                   quiet_softmax=norm_first).init()
    x = pyrite.tensor(np.random.default_rng(4).normal(size=(2, 6, 12)).astype(np.float32))
    full = enc(TransformerEncoderInput(x).mask_attn(generate_autoregressive_mask(2, 6))).numpy()
    cache = enc.new_autoregressive_cache()
    steps = [enc.forward_autoregressive_inference(TransformerEncoderInput(x[:, t:t + 1]), cache)
             for t in range(6)]
    assert cache.length == 6 and cache.layers[2].key.shape == (2, 3, 6, 4)
    np.testing.assert_allclose(np.concatenate([s.numpy() for s in steps], 1), full, atol=1e-5)
    # a chunk of several new positions is causal within itself too
    chunked = enc.new_autoregressive_cache()
    parts = [enc.forward_autoregressive_inference(TransformerEncoderInput(x[:, a:b]), chunked)
             for a, b in ((0, 2), (2, 5), (5, 6))]
    np.testing.assert_allclose(np.concatenate([p.numpy() for p in parts], 1), full, atol=1e-5)


def test_encoder_cache_with_padding() -> None:
    enc = TransformerEncoderConfig(8, 16, 2, 2).init()
    x = pyrite.tensor(np.random.default_rng(6).normal(size=(2, 4, 8)).astype(np.float32))
    pad = np.array([[False, True, False, False], [False, False, False, False]])
    mask = TransformerEncoderInput(x).mask_attn(generate_autoregressive_mask(2, 4)).mask_pad(
        pyrite.tensor(pad))
    full = enc(mask).numpy()
    cache = enc.new_autoregressive_cache()
    steps = [enc.forward_autoregressive_inference(
        TransformerEncoderInput(x[:, t:t + 1]).mask_pad(pyrite.tensor(pad[:, t:t + 1])), cache)
        for t in range(4)]
    got = np.concatenate([s.numpy() for s in steps], 1)
    np.testing.assert_allclose(got[:, 2:], full[:, 2:], atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_cache_equals_full_causal_forward(norm_first: bool) -> None:
    dec = TransformerDecoderConfig(8, 16, 2, 2, norm_first=norm_first).init()
    rng = np.random.default_rng(7)
    target = pyrite.tensor(rng.normal(size=(2, 5, 8)).astype(np.float32))
    memory = pyrite.tensor(rng.normal(size=(2, 3, 8)).astype(np.float32))
    mem_pad = pyrite.tensor(np.array([[False, False, True], [False, False, False]]))
    full = dec(TransformerDecoderInput(target, memory).target_mask_attn(
        generate_autoregressive_mask(2, 5)).memory_mask_pad(mem_pad)).numpy()
    cache = dec.new_autoregressive_cache()
    steps = [dec.forward_autoregressive_inference(TransformerDecoderInput(
        target[:, t:t + 1], memory).memory_mask_pad(mem_pad), cache) for t in range(5)]
    assert cache.length == 5 and cache.cross_attn[0].length == 3
    np.testing.assert_allclose(np.concatenate([s.numpy() for s in steps], 1), full, atol=1e-5)


def test_cache_steps_read_nothing_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decoding with the cache never reads a tensor back (the page decodes on WebGPU)."""
    enc = TransformerEncoderConfig(8, 16, 2, 2).init()
    cache = enc.new_autoregressive_cache()
    backend = pyrite.device("numpy")

    def refuse(*_: Any) -> Any:
        raise AssertionError("read back during a cached step")

    monkeypatch.setattr(type(backend), "to_data", refuse)
    for _ in range(3):
        out = enc.forward_autoregressive_inference(TransformerEncoderInput(
            pyrite.ones((1, 1, 8))), cache)
    monkeypatch.undo()
    assert out.shape == (1, 1, 8)


# ---- positional encodings -----------------------------------------------------------------------
def test_positional_encoding_against_the_formula() -> None:
    pe = PositionalEncodingConfig(6, max_sequence_size=40, max_timescale=100).init()
    x = np.random.default_rng(8).normal(size=(2, 30, 6)).astype(np.float32)
    pos = np.arange(30)[:, None]
    rate = np.exp(-np.arange(0, 6, 2) * math.log(100) / 6)[None]
    want = np.zeros((30, 6))
    want[:, 0::2], want[:, 1::2] = np.sin(pos * rate), np.cos(pos * rate)
    np.testing.assert_allclose(pe(pyrite.tensor(x)).numpy(), x + want, atol=1e-5)
    np.testing.assert_allclose(pe.apply(pyrite.tensor(x[:, 4:6]), 10).numpy(),
                               x[:, 4:6] + want[10:12], atol=1e-5)
    with pytest.raises(ShapeError, match="exceed max_sequence_size=40"):
        pe(pyrite.zeros((1, 41, 6)))
    with pytest.raises(ShapeError, match="d_model=6"):
        pe(pyrite.zeros((1, 4, 8)))


def test_rotary_encoding_against_the_formula() -> None:
    rope = RotaryEncodingConfig(16, 8, theta=100.0).init()
    x = np.random.default_rng(9).normal(size=(2, 3, 5, 8))
    freq = 100.0 ** (-np.arange(0, 8, 2) / 8)
    want = np.empty_like(x)
    for p in range(5):
        angle = (p + 4) * freq
        a, b = x[..., p, 0::2], x[..., p, 1::2]
        want[..., p, 0::2] = a * np.cos(angle) - b * np.sin(angle)
        want[..., p, 1::2] = a * np.sin(angle) + b * np.cos(angle)
    got = rope.apply(pyrite.tensor(x.astype(np.float32)), 4).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)
    # rotations keep norms, and relative positions are what q.k sees
    np.testing.assert_allclose(np.linalg.norm(got, axis=-1), np.linalg.norm(x, axis=-1),
                               rtol=1e-5)
    with pytest.raises(ConfigError, match="d_model must be even"):
        RotaryEncodingConfig(16, 7)


# ---- configs, printing, records, errors --------------------------------------------------------
CONFIGS = [MultiHeadAttentionConfig(8, 2, quiet_softmax=True),
           TransformerEncoderConfig(8, 16, 2, 2, norm_first=True),
           TransformerDecoderConfig(8, 16, 2, 1, activation="relu")]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: type(c).__name__)
def test_config_round_trips_and_records_cross_backends(config: Any, tmp_path: Path,
                                                       device_named: Any) -> None:
    assert type(config).from_json(config.to_json()) == config
    module = config.init()
    saved = module.save_file(tmp_path / "model")
    for device in ("numpy", "webgpu"):
        target = device_named(device) if device != "numpy" else device
        restored = config.init(target).load_file(saved)
        for (path, p), (path2, q) in zip(module.named_params(), restored.named_params(),
                                         strict=True):
            assert path == path2
            np.testing.assert_allclose(p.val.numpy(), q.val.numpy())


def test_printing() -> None:
    enc = TransformerEncoderConfig(8, 16, 2, 1).init()
    text = repr(enc)
    assert text.startswith("TransformerEncoder {\n  layers: [\n    0: TransformerEncoderLayer {\n")
    assert "      mha: MultiHeadAttention {\n" in text
    assert "        activation: Gelu\n        d_model: 8\n        d_ff: 16\n" in text
    assert text.endswith("  d_model: 8\n  d_ff: 16\n  n_heads: 2\n  n_layers: 1\n  dropout: 0.1"
                         "\n  norm_first: false\n  quiet_softmax: false\n  activation: gelu\n"
                         f"  params: {enc.num_params()}\n}}")
    assert enc.num_params() == 4 * (8 * 8 + 8) + (8 * 16 + 16) + (16 * 8 + 8) + 2 * 16
    assert repr(RotaryEncodingConfig(10, 4).init()) == (
        "RotaryEncoding {d_model: 4, max_sequence_length: 10, theta: 10000.0}")
    assert repr(PositionalEncodingConfig(4, max_sequence_size=8).init()) == (
        "PositionalEncoding {d_model: 4, max_sequence_size: 8, max_timescale: 10000}")


def test_errors_name_the_problem_and_the_fix() -> None:
    with pytest.raises(ConfigError, match=r"n_heads=3 must divide d_model=16.*\[1, 2, 4, 8, 16\]"):
        MultiHeadAttentionConfig(16, 3)
    with pytest.raises(ConfigError, match="activation must be one of 'gelu', 'relu'"):
        TransformerEncoderConfig(8, 16, 2, 1, activation="swish")
    mha = MultiHeadAttentionConfig(8, 2).init()
    with pytest.raises(ShapeError, match=r"query must have shape \(batch, seq, d_model=8\), got "
                                         r"\(2, 3, 6\)"):
        mha(MhaInput.self_attn(pyrite.zeros((2, 3, 6))))
    with pytest.raises(ShapeError, match=r"mask_pad must have shape \(2, 3\).*padded keys\), got "
                                         r"\(2, 4\)"):
        mha(MhaInput.self_attn(pyrite.zeros((2, 3, 8))).mask_pad(pyrite.zeros((2, 4)).bool()))
    with pytest.raises(KindError, match="mask_attn must be a Bool tensor"):
        mha(MhaInput.self_attn(pyrite.zeros((2, 3, 8))).mask_attn(pyrite.zeros((2, 3, 3))))
    enc = TransformerEncoderConfig(8, 16, 2, 1).init()
    with pytest.raises(ShapeError, match="d_model=8"):
        enc(TransformerEncoderInput(pyrite.zeros((1, 2, 4))))
    with pytest.raises(ShapeError, match="mask_attn must be None"):
        enc.forward_autoregressive_inference(TransformerEncoderInput(pyrite.zeros((1, 1, 8)))
                                             .mask_attn(generate_autoregressive_mask(1, 1)),
                                             enc.new_autoregressive_cache())
    with pytest.raises(ShapeError, match=r"mask .* does not broadcast to the scores"):
        F.attention(pyrite.zeros((1, 2, 3, 4)), pyrite.zeros((1, 2, 5, 4)),
                    pyrite.zeros((1, 2, 5, 4)), pyrite.zeros((1, 1, 3, 4)))
    with pytest.raises(ShapeError, match="key .* does not fit query"):
        F.attention(pyrite.zeros((1, 2, 3, 4)), pyrite.zeros((1, 2, 5, 3)),
                    pyrite.zeros((1, 2, 5, 4)))
