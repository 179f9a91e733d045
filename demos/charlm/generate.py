"""Text generation: the prompt in one call, then one position per new character through the
key/value cache, sampled with temperature and top-k on the host.

Each step reads back one small tensor, the logits of the last position (vocab floats), and
samples in Python with a seeded `random.Random`, so the same seed gives the same text on every
backend (temperature 0 is greedy: the first largest logit). The cache covers at most
`context` positions (the positional table's length); when it is full, the last `context // 2`
characters are run again into a fresh cache, in one call, and generation goes on (the uncached
reference sees the same windows, so both give the same text). A prompt longer than `context`
is cut to its last `context` characters.

The prompt's characters must be in the model's vocabulary (ASCII printable and newline);
others are reported with a ValueError naming them. An empty prompt starts from a newline, as
every docstring in the corpus follows one.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from pathlib import Path

import pyrite
from pyrite import Tensor, TensorData, from_data
from pyrite.capture import compile as compile_step
from pyrite.capture import replays_on
from pyrite.errors import ConfigError
from pyrite.nn.transformer import TransformerEncoderAutoregressiveCache

from .model import Model, ModelConfig

#: the committed record (`pyrite train charlm --export`, half precision) and its training config
SHIPPED = Path(__file__).with_name("charlm.bin")
CONFIG = Path(__file__).with_name("charlm.json")

Device = str | pyrite.Backend | None


def model_config(config: Path | str | bytes = CONFIG) -> ModelConfig:
    """The model part of a training config: a file, or its JSON text or bytes."""
    text = config.read_text() if isinstance(config, Path) else (
        config.decode() if isinstance(config, bytes) else config)
    return ModelConfig.from_dict(json.loads(text)["model"])


def load(device: Device = None, record: Path | bytes = SHIPPED,
         config: Path | str | bytes = CONFIG) -> Model:
    """The model on `device` with a binary record's weights (a file or its bytes)."""
    from pyrite.demos.records import read_bin
    from pyrite.module import init_from_record

    cfg = model_config(config)
    rec, source = read_bin(record)
    # built without initialising the params the record overwrites
    return init_from_record(lambda: cfg.init(device), rec, source=source)


def encode_prompt(prompt: str, vocab: str) -> list[int]:
    """Token ids of `prompt` ("\\n" when empty); ValueError naming unknown characters."""
    index = {c: i for i, c in enumerate(vocab)}
    unknown = sorted({c for c in prompt if c not in index})
    if unknown:
        codes = ", ".join(f"U+{ord(c):04X}" for c in unknown)
        raise ConfigError(f"charlm: the prompt has characters the model does not know: "
                         f"{''.join(unknown)!r} ({codes}); it knows the {len(vocab)} characters "
                         f"of its vocabulary (the shipped one: ASCII printable and newline)")
    return [index[c] for c in (prompt or "\n")]


def sample(logits: list[float], temperature: float, top_k: int | None,
           rng: random.Random) -> int:
    """A token id from one position's logits: greedy (first largest) at temperature 0, else
    softmax(logits / temperature) over the `top_k` largest (all when None).

    >>> sample([0.0, 2.0, 1.0], 0.0, None, random.Random(0))
    1
    """
    if temperature < 0 or (top_k is not None and top_k < 1):
        raise ConfigError(f"charlm: temperature must be >= 0 and top_k >= 1, got "
                         f"{temperature} and {top_k}")
    if temperature == 0:
        return max(range(len(logits)), key=logits.__getitem__)
    order = sorted(range(len(logits)), key=lambda i: (-logits[i], i))
    kept = order[:top_k] if top_k is not None else order
    top = logits[kept[0]]
    weights = [math.exp((logits[i] - top) / temperature) for i in kept]
    return rng.choices(kept, weights=weights)[0]


@compile_step(warn=False)
def _next_logits(model: Model, tokens: Tensor, position: Tensor) -> Tensor:
    """The logits at `position` of a (1, context) window: one program for every position."""
    return model.forward(tokens).select(1, position).reshape((-1,))


class Generation:
    """One generation's state: the cache, the characters so far and the sampler's generator.

    `Generation(model, prompt, temperature=0.8, top_k=20, seed=0)` runs the prompt; each
    `step()` gives the next character. `cached=False` recomputes the whole window each step
    instead (the reference the cache is tested and benchmarked against).
    """

    def __init__(self, model: Model, prompt: str, *, temperature: float = 0.8,
                 top_k: int | None = 20, seed: int | None = 0, cached: bool = True,
                 compiled: bool | None = None) -> None:
        self.model, self.cached = model, cached
        # compiled: every step is one replayed program over the window padded to `context`
        # (causal attention: the padding never reaches the position read), instead of the
        # key/value cache whose growing shapes would make each position a program of its own;
        # default: where programs replay (webgpu with PYRITE_COMPILE on)
        self.compiled = (replays_on(model.devices()[0]) if compiled is None else compiled)
        self.temperature, self.top_k = temperature, top_k
        self.rng = random.Random(seed)
        self.ids = encode_prompt(prompt, model.vocab)
        self.start = max(0, len(self.ids) - model.context)  # the window the model sees
        self.cache: TransformerEncoderAutoregressiveCache | None = None
        self.logits = (self._padded() if self.compiled else
                       self._restart() if cached else self._window())

    def _restart(self) -> list[float]:
        """A fresh cache fed the window (from `self.start`) in one call."""
        self.cache = self.model.new_cache()
        return self._run(self.ids[self.start:])

    def _run(self, ids: list[int]) -> list[float]:
        assert self.cache is not None
        logits = self.model.forward_cached(self.model.tokens([ids]), self.cache)
        return [float(v) for v in logits.reshape((-1,)).to_list()]

    def _window(self) -> list[float]:
        ids = self.ids[self.start:]
        logits = self.model.forward(self.model.tokens([ids]))
        row = logits.narrow(1, len(ids) - 1, 1).reshape((-1,))
        return [float(v) for v in row.to_list()]

    def _padded(self) -> list[float]:
        ids = self.ids[self.start:]
        padded = ids + [0] * (self.model.context - len(ids))
        device = self.model.devices()[0]
        position = from_data(TensorData([len(ids) - 1], shape=(1,), dtype="i32"), device=device)
        row = _next_logits(self.model, self.model.tokens([padded]), position)
        return [float(v) for v in row.to_list()]

    def _slide(self) -> bool:
        """Keep the window within `context`: past it, restart from the last half context.
        Whether it moved (both modes see the same window, so they give the same text)."""
        if len(self.ids) - self.start <= self.model.context:
            return False
        self.start = len(self.ids) - max(self.model.context // 2, 1)
        return True

    def step(self) -> str:
        """The next character (and the model advanced past it)."""
        token = sample(self.logits, self.temperature, self.top_k, self.rng)
        self.ids.append(token)
        moved = self._slide()
        if self.compiled:
            self.logits = self._padded()
        elif not self.cached:
            self.logits = self._window()
        elif moved:
            self.logits = self._restart()
        else:
            self.logits = self._run([token])
        return self.model.vocab[token]

    def stream(self, n: int) -> Iterator[str]:
        for _ in range(n):
            yield self.step()


def generate(model: Model, prompt: str, tokens: int = 200, *, temperature: float = 0.8,
             top_k: int | None = 20, seed: int | None = 0, cached: bool = True,
             compiled: bool | None = None) -> str:
    """`tokens` characters following `prompt` (the prompt not included)."""
    gen = Generation(model, prompt, temperature=temperature, top_k=top_k, seed=seed,
                     cached=cached, compiled=compiled)
    return "".join(gen.stream(tokens))


__all__ = ["CONFIG", "SHIPPED", "Generation", "encode_prompt", "generate", "load",
           "model_config", "sample"]
