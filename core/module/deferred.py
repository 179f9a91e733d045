"""Building a model whose params a record is about to overwrite, without initialising them.

`init_from_record(build, record)` calls `build()` (any code that builds a module: a config's
`init(device)`, a model class) while initializers are off, then loads `record` into it:

    model = init_from_record(lambda: MnistConfig().init(device), record)

While it builds, every `Initializer.init_param` (all of `pyrite.nn`'s layers make their params
through it) gives a param of the right shape, dtype and device whose values are undefined:
no random numbers are drawn and, on webgpu, no kernel is dispatched and no pipeline compiled
for them (the buffer is allocated, nothing is written). `load_record` then replaces every one
of them; it refuses a record that lacks any param before anything is returned, so a value that
was never initialised cannot escape. Tensors a layer computes in its constructor that are not
params (a positional encoding's table, masks) are computed as usual.

The result is the module `build().load_record(record)` gives, without the initialisation's
work (and without advancing the device's random generator).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from ..record import RecordValue
    from .base import Module

M = TypeVar("M", bound="Module")

_SKIPPING: ContextVar[bool] = ContextVar("pyrite_skip_init", default=False)


def init_skipped() -> bool:
    """Whether initializers give undefined values now (inside `init_from_record`'s build)."""
    return _SKIPPING.get()


@contextmanager
def _skipping_init() -> Iterator[None]:
    token = _SKIPPING.set(True)
    try:
        yield
    finally:
        _SKIPPING.reset(token)


def init_from_record(build: Callable[[], M], record: Mapping[str, RecordValue], *,
                     source: str = "record") -> M:
    """`build()` with `record` loaded, its params never initialised (see the module's doc).

    `source` names the record in errors (`load_record`'s). Raises RecordError, as
    `load_record` does, when the record does not fit the built module.
    """
    with _skipping_init():
        model = build()
    return model.load_record(record, source=source)


__all__ = ["init_from_record", "init_skipped"]
