"""The character-level language model demo: corpus, vocabulary, training, cached generation,
the committed record and the commands."""

from __future__ import annotations

import json
import random

import pytest

import pyrite
from pyrite.demos.charlm import corpus
from pyrite.demos.charlm.generate import (
    CONFIG,
    SHIPPED,
    Generation,
    encode_prompt,
    generate,
    load,
    sample,
)
from pyrite.demos.charlm.model import ModelConfig
from pyrite.demos.charlm.training import WindowLoader, encode
from pyrite.optim import AdamConfig


@pytest.fixture(scope="module")
def tiny_vocab() -> str:
    return corpus.vocabulary(corpus.corpus(20_000))


def tiny(vocab: str, device: str = "numpy", context: int = 16) -> ModelConfig:
    return ModelConfig(vocab, d_model=32, n_heads=2, n_layers=1, d_ff=64, context=context)


# ---- corpus and vocabulary -----------------------------------------------------------------------

def test_corpus_is_deterministic_ascii_and_split() -> None:
    text = corpus.corpus(50_000)
    assert text == corpus.corpus(50_000)
    assert len(text) == 50_000
    assert set(text) <= corpus.ALLOWED
    train, valid = corpus.split(text)
    assert train + valid == text and len(valid) == 5_000


def test_corpus_full_size_is_reachable() -> None:
    assert len(corpus.corpus()) == corpus.SIZE


def test_vocabulary_round_trips_with_the_config(tiny_vocab: str) -> None:
    config = tiny(tiny_vocab)
    again = ModelConfig.from_json(config.to_json())
    assert again == config and again.vocab == tiny_vocab
    ids = encode("Return x.\n", again.vocab)
    assert "".join(again.vocab[i] for i in ids) == "Return x.\n"


def test_config_rejects_repeated_characters() -> None:
    with pytest.raises(ValueError, match="distinct"):
        ModelConfig("aab")


# ---- training ------------------------------------------------------------------------------------

def test_tiny_model_loss_falls(tiny_vocab: str) -> None:
    pyrite.seed(0)
    device = pyrite.device("autodiff<numpy>")
    model = tiny(tiny_vocab).init(device)
    ids = encode(corpus.corpus(20_000), tiny_vocab)
    loader = WindowLoader(ids, device, context=16, batch_size=8, steps=1, seed=3)
    batch = next(iter(loader))
    optim = AdamConfig().init()
    losses = []
    for _ in range(12):  # the same batch: the loss must fall
        out = model.train_step(batch)
        losses.append(float(out.item.loss.into_scalar()))
        model = optim.step(1e-2, model, out.grads)
    assert losses[-1] < losses[0] - 0.5, losses


def test_windows_repeat_per_seed_and_epoch(tiny_vocab: str) -> None:
    ids = list(range(1000))
    loader = WindowLoader(ids, pyrite.device("numpy"), context=8, batch_size=4, steps=3, seed=7)
    assert loader.starts(1) == loader.starts(1) != loader.starts(2)
    batch = next(iter(loader))
    rows = batch.to_list()
    assert len(rows) == 4 and all(row == list(range(row[0], row[0] + 9)) for row in rows)


# ---- generation ----------------------------------------------------------------------------------

def test_cached_generation_equals_uncached_greedy(tiny_vocab: str) -> None:
    pyrite.seed(1)
    model = tiny(tiny_vocab, context=16).init("numpy")
    for prompt in ("Return the", "x" * 30, ""):  # within, beyond and without a context
        cached = generate(model, prompt, 20, temperature=0)
        assert cached == generate(model, prompt, 20, temperature=0, cached=False)
        assert len(cached) == 20


def test_each_cached_step_runs_one_position(tiny_vocab: str) -> None:
    model = tiny(tiny_vocab, context=32).init("numpy")
    gen = Generation(model, "abc", temperature=0)
    assert gen.cache is not None and gen.cache.length == 3  # the prompt, in one call
    gen.step()
    assert gen.cache.length == 4


def test_sampling_is_seeded_and_respects_top_k() -> None:
    logits = [0.0, 5.0, 4.9, -3.0]
    draws = [sample(logits, 1.0, 2, random.Random(s)) for s in range(50)]
    assert set(draws) == {1, 2}
    assert draws == [sample(logits, 1.0, 2, random.Random(s)) for s in range(50)]
    assert sample(logits, 0.0, None, random.Random(0)) == 1
    with pytest.raises(ValueError, match="temperature"):
        sample(logits, -1.0, None, random.Random(0))


def test_unknown_prompt_characters_are_reported(tiny_vocab: str) -> None:
    with pytest.raises(ValueError, match=r"'\u00e9' \(U\+00E9\)"):
        encode_prompt("caf\u00e9", tiny_vocab)
    assert encode_prompt("", tiny_vocab) == [tiny_vocab.index("\n")]


# ---- the committed record ------------------------------------------------------------------------

def test_committed_record_loads_and_generates_deterministically() -> None:
    assert SHIPPED.stat().st_size < 4 * 1024 * 1024
    config = json.loads(CONFIG.read_text())
    model = load("numpy")
    assert model.vocab == config["model"]["vocab"]
    first = generate(model, "Return the", 40, temperature=0.8, top_k=20, seed=5)
    assert first == generate(model, "Return the", 40, temperature=0.8, top_k=20, seed=5)
    assert len(first) == 40 and set(first) <= set(model.vocab)
    greedy = generate(model, "Return the", 20, temperature=0)
    assert greedy == generate(model, "Return the", 20, temperature=0, cached=False)


def test_registry_runs_the_committed_model() -> None:
    from pyrite.demos import registry

    demo = registry.get("charlm")
    model = demo.load("numpy")
    out = demo.predict(model, {"prompt": "Return", "tokens": 8, "temperature": 0})
    assert out == {"text": generate(model, "Return", 8, temperature=0)}
    with pytest.raises(ValueError, match="prompt"):
        demo.predict(model, {"prompt": 3})


def test_session_streams_what_generate_gives() -> None:
    from pyrite.demos import registry
    from pyrite.demos.charlm import session

    model = registry.get("charlm").load("numpy")  # hands the model to the session
    session.begin("Return", {"temperature": 0})
    text = session.next(5)["text"] + session.next(3)["text"]  # type: ignore[operator]
    assert text == generate(model, "Return", 8, temperature=0)


# ---- commands ------------------------------------------------------------------------------------

def test_train_and_generate_commands(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from pyrite.cli import main

    record = tmp_path / "small.bin"
    assert main(["train", "charlm", "--small", "--epochs", "1", "--steps-per-epoch", "2",
                 "--batch-size", "2", "--artifacts", str(tmp_path / "run"),
                 "--export", str(record)]) == 0
    assert record.exists() and record.with_suffix(".json").exists()
    assert "validation loss" in capsys.readouterr().out
    assert main(["generate", "charlm", "--record", str(record), "--prompt", "Re",
                 "--tokens", "5", "--temperature", "0"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("Re") and len(out.out) == 2 + 5 + 1
    assert "tokens/s" in out.err
    assert main(["generate", "charlm", "--record", str(record), "--prompt", "\u00e9"]) == 2
    assert "does not know" in capsys.readouterr().err
