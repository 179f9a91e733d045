"""The character-level language model (`pyrite.demos.charlm`): training tokens/s against the
same architecture in PyTorch (same run), and generation tokens/s with the key/value cache and
without it.

Training: a timed step is what the Learner does per batch (forward, cross-entropy over every
position, backward, Adam), on the shipped config's sizes (batch 16 windows of 64 characters,
d_model 128, 3 pre-norm layers, 4 heads, d_ff 512, GELU, causal mask). Batches are built
before timing, the same windows for both frameworks. `--warmup` steps, then `--steps` timed
steps, `--repeats` times, alternating; the best repeat of each counts.

Generation: greedy, after a 10-character prompt, `--tokens` characters with the shipped record
(a freshly initialised model of its config if the record is missing): cached (one position
per character, the logits of the last position read back) and uncached (the whole window
recomputed per character).

    python benchmarks/charlm.py --out benchmarks/results/charlm_cpu.json
    python benchmarks/charlm.py --device webgpu --peer cuda \
        --out benchmarks/results/charlm_h100.json

`--device webgpu --peer cuda` trains on autodiff<webgpu> against PyTorch CUDA eager (TF32 off)
and generates on webgpu. PyTorch must be `torch==2.13.0`; without it the peer is skipped.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import statistics
import time
from pathlib import Path
from typing import Any

from common import cpu_name, cuda_torch, load_average, pin_threads, write_results

import pyrite
from pyrite.demos.charlm import corpus
from pyrite.demos.charlm.generate import CONFIG, SHIPPED, generate, load, model_config
from pyrite.demos.charlm.model import Model
from pyrite.demos.charlm.training import encode
from pyrite.optim import AdamConfig

BATCH = 16
LR = 2e-3
PROMPT = "Return the"


def windows(vocab: str, context: int, n: int) -> list[list[int]]:
    ids = encode(corpus.corpus(100_000), vocab)
    rng = random.Random(0)
    starts = [rng.randrange(len(ids) - context - 1) for _ in range(n * BATCH)]
    return [ids[s:s + context + 1] for s in starts]


# ---- pyrite -----------------------------------------------------------------------------------
def pyrite_train(rows: list[list[int]], device: str, steps: int, warmup: int,
                 repeats: int) -> list[float]:
    """Seconds per step, one number per repeat."""
    ad = pyrite.device(f"autodiff<{device}>")
    model = model_config().init(ad)
    optim = AdamConfig().init()
    batches = [model.tokens(rows[i:i + BATCH]) for i in range(0, len(rows), BATCH)]
    out = []
    for r in range(repeats + 1):
        count = warmup if r == 0 else steps
        start = time.perf_counter()
        for i in range(count):
            step = model.train_step(batches[i % len(batches)])
            model = optim.step(LR, model, step.grads)
        float(step.item.loss.into_scalar())  # wait for the device
        if r:
            out.append((time.perf_counter() - start) / count)
    return out


def pyrite_generate(device: str, tokens: int) -> dict[str, float]:
    model = _model(device)
    result = {}
    generate(model, PROMPT, 4, temperature=0)  # compile / warm up
    for cached in (True, False):
        start = time.perf_counter()
        generate(model, PROMPT, tokens, temperature=0, cached=cached)
        result["cached" if cached else "uncached"] = tokens / (time.perf_counter() - start)
    return result


def _model(device: str) -> Model:
    if SHIPPED.exists():
        return load(device)
    return model_config(CONFIG).init(device)


# ---- torch ------------------------------------------------------------------------------------
def torch_model(torch: Any, device: str) -> Any:
    """The same architecture in PyTorch: Embedding N(0, 1), sinusoids, pre-norm encoder layers
    (GELU, no dropout), a final LayerNorm and the head."""
    nn = torch.nn
    cfg = model_config()

    class CharLm(nn.Module):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            d = cfg.d_model
            self.embedding = nn.Embedding(len(cfg.vocab), d)
            layer = nn.TransformerEncoderLayer(d, cfg.n_heads, cfg.d_ff, dropout=0.0,
                                               activation="gelu", batch_first=True,
                                               norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, len(cfg.vocab))
            pos = torch.arange(cfg.context, dtype=torch.float64).unsqueeze(1)
            rate = torch.exp(-torch.arange(0, d, 2, dtype=torch.float64) * math.log(1e4) / d)
            table = torch.stack([torch.sin(pos * rate), torch.cos(pos * rate)], 2).reshape(
                cfg.context, d)
            self.register_buffer("sinusoids", table.float())

        def forward(self, x: Any) -> Any:
            seq = x.shape[1]
            h = self.embedding(x) + self.sinusoids[:seq]
            mask = nn.Transformer.generate_square_subsequent_mask(seq, device=x.device)
            h = self.encoder(h, mask=mask, is_causal=True)
            return self.head(self.norm(h))

    return CharLm().to(device)


def torch_train(torch: Any, rows: list[list[int]], device: str, steps: int, warmup: int,
                repeats: int) -> list[float]:
    model = torch_model(torch, device)
    optim = torch.optim.Adam(model.parameters(), lr=LR, eps=1e-5)
    loss_fn = torch.nn.CrossEntropyLoss()
    data = torch.tensor(rows, dtype=torch.long, device=device)
    batches = [data[i:i + BATCH] for i in range(0, len(rows), BATCH)]
    out = []
    for r in range(repeats + 1):
        count = warmup if r == 0 else steps
        start = time.perf_counter()
        for i in range(count):
            batch = batches[i % len(batches)]
            logits = model(batch[:, :-1])
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
            optim.zero_grad()
            loss.backward()
            optim.step()
        float(loss.detach())
        if r:
            out.append((time.perf_counter() - start) / count)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="numpy", choices=["numpy", "webgpu"])
    parser.add_argument("--peer", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=100, help="characters generated")
    parser.add_argument("--generate-devices", default=None,
                        help="comma-separated devices to time generation on (default: numpy,"
                        "webgpu for --device numpy, webgpu otherwise)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS / intra-op threads of both pyrite and PyTorch CPU")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    cfg = model_config()
    tokens_per_step = BATCH * cfg.context
    rows = windows(cfg.vocab, cfg.context, max(args.steps, args.warmup))
    result: dict[str, Any] = {
        "benchmark": "charlm", "machine": {"cpu": cpu_name(), "cores": os.cpu_count(),
                                           "python": platform.python_version()},
        "model": {"d_model": cfg.d_model, "n_layers": cfg.n_layers, "n_heads": cfg.n_heads,
                  "d_ff": cfg.d_ff, "context": cfg.context, "vocab": len(cfg.vocab),
                  "batch": BATCH, "tokens_per_step": tokens_per_step},
        "settings": {"steps": args.steps, "warmup": args.warmup, "repeats": args.repeats},
    }

    torch: Any = None
    try:
        import torch as torch_module
        torch = torch_module
    except ImportError:
        pass
    if args.peer == "cuda":
        torch = cuda_torch()
    pin_threads(args.threads, torch if args.peer == "cpu" else None)
    result["settings"]["threads"] = args.threads
    result["load_average"] = {"start": load_average()}
    torch_runs: list[float] = []
    pyrite_runs: list[float] = []
    # alternate the frameworks, repeat by repeat, so both see the same machine load
    for _ in range(args.repeats):
        pyrite_runs += pyrite_train(rows, args.device, args.steps, args.warmup, 1)
        if torch is not None:
            torch_runs += torch_train(torch, rows, args.peer, args.steps, args.warmup, 1)
    best = min(pyrite_runs)
    train: dict[str, Any] = {
        "pyrite": {"device": f"autodiff<{args.device}>", "s_per_step": pyrite_runs,
                   "tokens_per_s": tokens_per_step / best},
        "torch": None, "ratio": None,
    }
    if torch is not None:
        tbest = min(torch_runs)
        train["torch"] = {"version": torch.__version__, "device": args.peer,
                          "threads": torch.get_num_threads(), "s_per_step": torch_runs,
                          "tokens_per_s": tokens_per_step / tbest}
        train["ratio"] = tbest / best  # pyrite's throughput as a fraction of torch's
        # the same from the medians: on a shared machine the best repeat can be luck
        train["ratio_median"] = statistics.median(torch_runs) / statistics.median(pyrite_runs)
        print(f"train: pyrite {tokens_per_step / best:.0f} tokens/s, torch "
              f"{tokens_per_step / tbest:.0f}; ratio {train['ratio']:.2f} (best), "
              f"{train['ratio_median']:.2f} (median)")
    result["train"] = train
    result["load_average"]["after_train"] = load_average()

    devices = (args.generate_devices.split(",") if args.generate_devices else
               (["numpy", "webgpu"] if args.device == "numpy" else ["webgpu"]))
    gen: dict[str, Any] = {"prompt": PROMPT, "tokens": args.tokens,
                           "record": SHIPPED.name if SHIPPED.exists() else None}
    for device in devices:
        try:
            gen[device] = pyrite_generate(device, args.tokens)
        except Exception as exc:  # noqa: BLE001 - a device missing here: say why
            gen[device] = {"error": f"{type(exc).__name__}: {exc}"}
    result["generate"] = gen
    print(json.dumps(result, indent=2))
    if args.out:
        write_results(args.out, result)


if __name__ == "__main__":
    main()
