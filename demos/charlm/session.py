"""Streaming generation for a page: `begin(prompt, options)`, then `next(n)` for the next n
characters, called from JavaScript with `pyrite.call("pyrite.demos.charlm.session.next", 4)`.

The generation (its key/value cache on the device, the text so far, the sampler) stays here,
in the page's Python, between calls, so the page shows characters as they come and a new
prompt simply replaces it. The model is the one the page loaded (`pyrite.load({models:
["charlm"]})` builds it through the registry, which hands it to `use`).
"""

from __future__ import annotations

import time
from typing import Any

from .generate import Generation
from .model import Model

_state: dict[str, Any] = {"model": None, "generation": None}


def use(model: Model) -> None:
    """The model later sessions generate with (the registry calls this when it builds one)."""
    _state["model"], _state["generation"] = model, None


def begin(prompt: str, options: dict[str, Any] | None = None) -> dict[str, object]:
    """Start generating after `prompt` (run in one call); options `temperature` (0.8), `top_k`
    (20, or null for all), `seed` (0). A ValueError names characters the model does not know.
    """
    model: Model | None = _state["model"]
    if model is None:
        raise RuntimeError("charlm: no model loaded in this page; pyrite.load({models: "
                           "['charlm']}) first")
    options = options or {}
    _state["generation"] = None
    start = time.perf_counter()
    top_k = options.get("top_k", 20)
    _state["generation"] = Generation(
        model, prompt, temperature=float(options.get("temperature", 0.8)),
        top_k=None if top_k is None else int(top_k), seed=int(options.get("seed", 0)))
    return {"prompt_chars": len(prompt), "ms": (time.perf_counter() - start) * 1000,
            "device": model.devices()[0].name}


def next(n: int = 1) -> dict[str, object]:  # noqa: A001 - the page's word for it
    """The next `n` characters, with the time they took (`ms`) and `tokens_per_s`."""
    generation: Generation | None = _state["generation"]
    if generation is None:
        raise RuntimeError("charlm: no generation started; call begin(prompt) first")
    start = time.perf_counter()
    text = "".join(generation.stream(int(n)))
    ms = (time.perf_counter() - start) * 1000
    return {"text": text, "ms": ms, "tokens_per_s": n / (ms / 1000) if ms > 0 else None,
            "position": len(generation.ids)}


__all__ = ["begin", "next", "use"]
