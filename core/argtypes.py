"""Checked values for commands and configs: number ranges, device names, paths.

`Range` says which numbers an option or config field takes ("an integer >= 1", "a number in
(0, 1]"). The same object checks a command-line value while arguments are parsed
(`type=EPOCHS.arg`, so `--epochs 0` is refused before anything starts) and a config field
(`EPOCHS.check("TrainingConfig.num_epochs", value)`, so `"num_epochs": 0` in a JSON file gets
the same words). `device_arg` refuses a device name that does not exist here; `path_arg`
refuses an empty path (which would mean the current folder).

This module owns the checks; pyrite/cli_errors.py turns what they raise into one line.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from pathlib import Path

from .errors import ConfigError


@dataclass(frozen=True)
class Range:
    """The numbers a value may take: `lo` and `hi` (None: unbounded), closed unless `lo_open`
    or `hi_open`; integers only when `integer`. NaN and infinities are never in a range.

    >>> Range(1, integer=True).describe()
    'an integer >= 1'
    >>> Range(0, 1, lo_open=True).problem(-1.0)
    'must be a number in (0, 1], got -1.0'
    >>> Range(0, 1, lo_open=True).problem(0.5) is None
    True
    """

    lo: float | None = None
    hi: float | None = None
    _: KW_ONLY
    integer: bool = False
    lo_open: bool = False
    hi_open: bool = False

    def describe(self) -> str:
        """The range in words: 'an integer in [0, 65535]', 'a number > 0'."""
        kind = "an integer" if self.integer else "a number"
        lo, hi = _show(self.lo), _show(self.hi)
        if self.lo is not None and self.hi is not None:
            return (f"{kind} in {'(' if self.lo_open else '['}{lo}, {hi}"
                    f"{')' if self.hi_open else ']'}")
        if self.lo is not None:
            return f"{kind} {'>' if self.lo_open else '>='} {lo}"
        if self.hi is not None:
            return f"{kind} {'<' if self.hi_open else '<='} {hi}"
        return "a finite number" if not self.integer else kind

    def problem(self, value: object) -> str | None:
        """What is wrong with `value` ('must be ..., got ...'), or None when it is in range.
        JSON booleans are not numbers here, and a float is not an integer."""
        wanted = (int,) if self.integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, wanted):
            return f"must be {self.describe()}, got {_shown(value)}"
        number = float(value) if not self.integer else value
        if isinstance(number, float) and not math.isfinite(number):
            return f"must be {self.describe()}, got {_shown(value)}"
        if self.lo is not None and (number < self.lo or (self.lo_open and number == self.lo)):
            return f"must be {self.describe()}, got {_shown(value)}"
        if self.hi is not None and (number > self.hi or (self.hi_open and number == self.hi)):
            return f"must be {self.describe()}, got {_shown(value)}"
        return None

    def check(self, where: str, value: object) -> None:
        """ConfigError `<where> must be ..., got ...` when `value` is outside the range."""
        found = self.problem(value)
        if found is not None:
            raise ConfigError(f"{where} {found}")

    def arg(self, text: str) -> int | float:
        """An argparse `type=`: the text as a number in the range, else an argparse error."""
        try:
            value: int | float = int(text) if self.integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {self.describe()}, got {_shown(text)}") \
                from None
        found = self.problem(value)
        if found is not None:
            raise argparse.ArgumentTypeError(found)
        return value


def _show(bound: float | None) -> str:
    if bound is None:
        return ""
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}... ({len(text):,} characters)"


# the ranges pyrite's commands and configs share
EPOCHS = Range(1, 100_000, integer=True)
SEED = Range(0, 2**32 - 1, integer=True)
PORT = Range(0, 65_535, integer=True)
COUNT = Range(1, integer=True)  # how many: items, steps, a batch's size
LEARNING_RATE = Range(0, 1, lo_open=True)
SECONDS = Range(0, 86_400)

#: the run settings training configs share, by field name: `check_fields` applies them
RUN_FIELDS: Mapping[str, Range] = {
    "num_epochs": EPOCHS, "batch_size": COUNT, "num_workers": Range(0, integer=True),
    "seed": SEED, "learning_rate": LEARNING_RATE, "min_learning_rate": Range(0, 1),
    "steps_per_epoch": COUNT, "valid_windows": COUNT}


def check_fields(config: object, rules: Mapping[str, Range] = RUN_FIELDS) -> None:
    """ConfigError naming the first field of `config` (a Config) outside its rule's range,
    such as `TrainingConfig.learning_rate must be a number in (0, 1], got -1`. Fields the
    config does not have are skipped. Call it from the config's `__post_init__`."""
    for field, rule in rules.items():
        if hasattr(config, field):
            rule.check(f"{type(config).__name__}.{field}", getattr(config, field))


def device_names() -> list[str]:
    """The base devices this installation has (numpy, webgpu, ...), for messages and --help."""
    from .device import backend_names
    return backend_names()


def _decorators() -> list[str]:
    """Every decorator name: registered ones and those an installed backend's package registers
    when imported (importing requests no adapter: pyrite.webgpu adds `fusion`)."""
    from .device import backend_entry_points, decorator_names
    for ep in backend_entry_points():
        try:
            ep.load()
        except ImportError:  # its optional dependency is missing: `pyrite info` says so
            continue
    return decorator_names()


def _indexed() -> list[str]:
    """The backends with several devices (`numpy:N`, `webgpu:N`): _decorators() first imports
    the installed backends, which register theirs."""
    from .device import indexed_names
    _decorators()
    return indexed_names()


def device_problem(name: str) -> str | None:
    """Why `name` is not a device name here ('numpy', 'autodiff<numpy>', ...), or None.
    Only the name is checked: whether the device works (an adapter exists) is found on use."""
    spec = name.strip()
    decorators: list[str] | None = None
    while "<" in spec and spec.endswith(">"):
        outer, spec = spec[:-1].split("<", 1)
        decorators = decorators if decorators is not None else _decorators()
        if outer not in decorators:
            return (f"unknown decorator {outer!r} in {name!r}; decorators: "
                    f"{', '.join(decorators)} (as in autodiff<numpy>)")
    base, sep, index = spec.rpartition(":")
    if sep and index.isdigit() and base in _indexed():
        return None  # one of several devices (numpy:1, webgpu:1); an index is checked on use
    if spec not in device_names():
        several = ", ".join(f"{n}:N" for n in _indexed())
        return (f"unknown device {name!r}; devices here: {', '.join(device_names())}, each "
                f"also as autodiff<NAME> for training" + (f", and {several}" if several else ""))
    return None


def device_arg(text: str) -> str:
    """An argparse `type=` for `--device`: a device name this installation knows."""
    found = device_problem(text)
    if found is not None:
        raise argparse.ArgumentTypeError(found)
    return text.strip()


def devices_arg(text: str) -> str:
    """An argparse `type=` for a `--device` that may list several devices, comma-separated
    (`numpy:0,numpy:1`: data-parallel training), each one a device this installation knows."""
    names = [name.strip() for name in text.split(",")]
    for name in names:
        found = device_problem(name)
        if found is not None:
            raise argparse.ArgumentTypeError(found)
    return ",".join(names)


def device_help(default: str, what: str = "device to run on") -> str:
    """`--device`'s help: what it does, the devices that exist here and the default."""
    return (f"{what}: {', '.join(device_names())}, or decorated as autodiff<NAME> "
            f"(default {default})")


def path_arg(text: str) -> Path:
    """An argparse `type=` for a file or folder: any path but an empty one."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; give a file or folder name "
                                         "(. for the current folder)")
    return Path(text).expanduser()


def folder_arg(text: str) -> Path:
    """An argparse `type=` for a folder that must exist already."""
    path = path_arg(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"no such folder: {text}" if not path.exists()
                                         else f"{text} is a file, not a folder")
    return path


__all__ = ["COUNT", "EPOCHS", "LEARNING_RATE", "PORT", "RUN_FIELDS", "SECONDS", "SEED", "Range",
           "check_fields", "device_arg", "device_help", "device_names", "device_problem",
           "devices_arg", "folder_arg", "path_arg"]
