"""Autotune: kernels with tunable parameters are timed on first use, and the fastest is kept.

Owns the choice of a kernel variant per key: (kernel family, adapter, shape bucket, dtype), the
timing of candidates and the persistence of choices (`TuneStore`). It does not own the kernels:
a family (`linalg.py`, `reduction.py`, `conv.py`) names its candidates, its heuristic default
(always the first candidate, and the answer whenever nothing is timed) and how to run one.

- **Shape bucket**: each size of the problem rounded up to a power of two (1000 -> 1024,
  1024 -> 1024; 0 and 1 stay), so a handful of keys covers a model and a choice serves every
  shape of its bucket. Each family says which sizes describe it: (m, n, k, batch) for matmul,
  (rows, length) for a reduction, (invocations, terms per invocation) for conv.
- **Timing** is wall clock around `runtime.sync()`: no timestamp queries (not in the runtime
  contract, and optional in browsers). Each candidate runs once untimed (it compiles), then is
  timed as enough back-to-back dispatches to outlast the sync's own cost; the best of two
  samples counts. Candidates run on the problem's own buffers (inputs are only read; the
  output is written again by the chosen one). A key stops timing after `budget_s` seconds,
  compiles included (the heuristic's choice is always timed); workgroup sizes of buckets below
  `MIN_WORK` are not tuned (every variant times alike there).
- **Modes** (`PYRITE_AUTOTUNE`): `on` (default) times on first use; `cached` uses stored
  choices and times nothing; `off` uses the heuristics and reads no store (cold starts, tests).
- **Persistence**: `TuneStore` (the interface; it keeps its JSON text in memory) and
  `FileStore` (a JSON file, default `$XDG_CACHE_HOME/pyrite/autotune.json`, overridden by
  `PYRITE_AUTOTUNE_CACHE`; written atomically). A page keeps the text in browser storage by
  overriding `read_text`/`write_text` the same way. Choices recorded under another pyrite
  version, adapter or driver are never used.
"""

from __future__ import annotations

import json
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__, config
from ..dtype import DType
from ..record.atomic import atomic_write
from . import matmul_config, software
from .matmul_config import TileConfig
from .runtime import AdapterInfo, Runtime

if TYPE_CHECKING:
    from .tensor import GpuTensor

FORMAT = 1  # the layout of the JSON document; another one is ignored like another version
WORKGROUPS = (32, 64, 128, 256)  # workgroup sizes timed for the 1-D and tree kernels
MIN_WORK = 1 << 16  # a bucket's elements (or terms) below which workgroup sizes time alike
BUDGET_S = 1.0  # seconds of timing per key, compiles included (lavapipe: 3 to 16 matmul tiles)
_TARGET_S = 0.002  # a timed batch of dispatches lasts this long, so the sync's cost is small
_MAX_REPEATS = 32
_ADAPTERS_KEPT = 8  # adapter sections a store keeps (a driver update starts a new one)
_SCALAR = "/scalar"  # a matmul candidate suffix: scalar storage access on aligned data
_SPLIT = "/k"  # a matmul candidate suffix: K split into that many slices

Entry = dict[str, object]  # {"choice": name, "ms": {candidate: milliseconds}, "sizes": [...]}
Key = tuple[str, DType, tuple[int, ...]]  # (family, dtype, bucket)


def bucket(sizes: Sequence[int]) -> tuple[int, ...]:
    """Each size rounded up to a power of two.

    >>> bucket((1000, 1024, 3, 1, 0))
    (1024, 1024, 4, 1, 0)
    """
    return tuple(0 if s <= 0 else 1 << (s - 1).bit_length() for s in sizes)


def key_name(key: Key) -> str:
    """A key as stored and reported: `family/dtype/bucket`, e.g. `matmul/f32/256x256x256x1`."""
    family, dtype, sizes = key
    return f"{family}/{dtype.short}/{'x'.join(map(str, sizes))}"


def adapter_identity(adapter: AdapterInfo) -> str:
    """What a choice is valid for: the adapter and its driver (natively the description holds
    the driver's name and version, e.g. 'Mesa 22.3.6 (LLVM 15.0.6)'). The index is left out:
    it changes when another adapter appears."""
    return "|".join((adapter.backend, adapter.vendor, adapter.name, adapter.adapter_type,
                     adapter.description))


class TuneStore:
    """Tuned choices per adapter, as one JSON document; this base class keeps it in `text`.

    A persistent store overrides `read_text` and `write_text` (`FileStore`: a file; a page:
    browser storage, e.g. text read from IndexedDB before the first run and written back in
    `write_text`). `get` reads the text once; `put` re-reads it (another process may have added
    choices), adds the entry and writes it back. The document::

        {"format": 1, "pyrite": "0.1.0",
         "adapters": {identity: {"adapter": {"name", "vendor", "backend", "type", "driver"},
                                 "entries": {key: {"choice", "ms", "sizes"}}}}}

    A document of another pyrite version or format is ignored (and replaced at the next put);
    a changed adapter or driver has another identity, so its old entries are never read. A
    document that does not parse is ignored with a warning; nothing fails because of it.
    """

    def __init__(self, text: str | None = None, *, version: str = __version__) -> None:
        self.text = text
        self.version = version
        self._doc: dict[str, Any] | None = None

    def read_text(self) -> str | None:
        """The stored document, or None when there is none."""
        return self.text

    def write_text(self, text: str) -> None:
        """Store the document."""
        self.text = text

    def location(self) -> str:
        """Where the document is kept, for messages."""
        return "the in-memory autotune store"

    def get(self, adapter: AdapterInfo, key: str) -> Entry | None:
        """The entry of `key` (see `key_name`) stored for `adapter`, if any."""
        if self._doc is None:
            self._doc = self._parse(self.read_text(), warn=True)
        section = self._doc["adapters"].get(adapter_identity(adapter))
        return None if section is None else section["entries"].get(key)

    def put(self, adapter: AdapterInfo, key: str, entry: Entry) -> None:
        """Record `entry` for `key` on `adapter`, here and in the stored document."""
        if self._doc is None:
            self._doc = self._parse(self.read_text(), warn=True)
        fresh = self._parse(self.read_text(), warn=False)
        for doc in (self._doc, fresh):
            adapters = doc["adapters"]
            ident = adapter_identity(adapter)
            section = adapters.pop(ident, None) or {"adapter": _describe(adapter), "entries": {}}
            section["entries"][key] = entry
            adapters[ident] = section  # the most recently written last
            for old in list(adapters)[:-_ADAPTERS_KEPT]:
                del adapters[old]
        self.write_text(json.dumps(fresh, indent=1, sort_keys=False))

    def _parse(self, text: str | None, warn: bool) -> dict[str, Any]:
        empty: dict[str, Any] = {"format": FORMAT, "pyrite": self.version, "adapters": {}}
        if not text:
            return empty
        try:
            doc = json.loads(text)
        except ValueError as exc:
            problem: str | None = f"not JSON: {exc}"
        else:
            if isinstance(doc, dict) and (doc.get("format") != FORMAT
                                          or doc.get("pyrite") != self.version):
                return empty  # written by another pyrite: its timings may not hold (invalidated)
            problem = _problem(doc)
        if problem is not None:
            if warn:
                warnings.warn(f"pyrite autotune: {self.location()} is ignored ({problem}); kernels "
                              f"are timed again and the store is rewritten", RuntimeWarning,
                              stacklevel=2)
            return empty
        return doc  # type: ignore[no-any-return]  # checked by _problem


class FileStore(TuneStore):
    """A `TuneStore` in a JSON file, written atomically (a temporary file renamed into place).

    `path` defaults to PYRITE_AUTOTUNE_CACHE, else `$XDG_CACHE_HOME/pyrite/autotune.json`, else
    `~/.cache/pyrite/autotune.json`. A file that cannot be written is warned about once; the
    choices then last for the process.
    """

    def __init__(self, path: str | Path | None = None, *, version: str = __version__) -> None:
        super().__init__(version=version)
        self.path = Path(path) if path is not None else Path(config.autotune_cache())
        self._warned = False

    def location(self) -> str:
        return str(self.path)

    def read_text(self) -> str | None:
        try:
            return self.path.read_bytes().decode("utf-8", "replace")
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._warn(f"cannot read {self.path} ({exc})")
            return None

    def write_text(self, text: str) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, lambda f: f.write(text.encode()))
        except OSError as exc:
            self._warn(f"cannot write {self.path} ({exc})")

    def _warn(self, problem: str) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(f"pyrite autotune: {problem}; tuned choices last for this process only "
                          f"(PYRITE_AUTOTUNE_CACHE moves the file)", RuntimeWarning, stacklevel=2)


@dataclass
class TuneStats:
    """What tuning cost in this process."""

    tuned: int = 0  # keys timed
    timed: int = 0  # candidates timed, over all keys
    seconds: float = 0.0  # wall time spent timing (compiles included)
    stored: int = 0  # keys whose choice came from the store


class Autotuner:
    """Chooses kernel variants for one runtime: `Kernels.autotune`.

    `pick` is the general form; `matmul` and `workgroup` serve the kernel families. `choices()`
    lists the choice of every key used so far, `stats` what tuning cost. `store` may be replaced
    (a page's storage) before the first kernel runs.
    """

    def __init__(self, runtime: Runtime, *, mode: str | None = None,
                 store: TuneStore | None = None, budget_s: float = BUDGET_S,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.runtime = runtime
        self.mode = config.autotune_mode() if mode is None else mode
        self.adapter = runtime.adapter
        if self.adapter.backend == "none":
            # the RecordingRuntime runs nothing: timings would be noise, and every candidate's
            # WGSL would be shipped to pages as a kernel to precompile
            self.mode = "off"
        self.budget_s = budget_s
        self.stats = TuneStats()
        self.tuning = 0  # > 0 while candidates are being timed
        self._store = store
        self._clock = clock
        self._chosen: dict[Key, str] = {}
        self._timings: dict[str, dict[str, float]] = {}
        self._forced: dict[str, int] = {}

    @property
    def store(self) -> TuneStore:
        if self._store is None:
            self._store = TuneStore() if self.mode == "off" else FileStore()
        return self._store

    @store.setter
    def store(self, store: TuneStore) -> None:
        self._store = store

    def choices(self) -> dict[str, str]:
        """The chosen candidate of each key used so far (timed here or found in the store)."""
        return {key_name(key): name for key, name in self._chosen.items()}

    def timings(self) -> dict[str, dict[str, float]]:
        """Milliseconds per candidate of each key timed in this process."""
        return {key: dict(times) for key, times in self._timings.items()}

    def pick(self, family: str, sizes: Sequence[int], dtype: DType,
             candidates: Callable[[], Sequence[str]], run: Callable[[str], object]) -> str:
        """The fastest of `candidates()` for this key; the first one (the heuristic's) when
        tuning is off, or `cached` finds nothing. `run(name)` dispatches that candidate once."""
        key = (family, dtype, bucket(sizes))
        found = self._chosen.get(key)
        if found is not None:
            return found
        names = list(candidates())
        if self.mode == "off":
            return names[0]
        entry = self.store.get(self.adapter, key_name(key))
        choice = entry.get("choice") if entry is not None else None
        if isinstance(choice, str) and choice in names:
            self.stats.stored += 1
            found = choice
        elif self.mode == "on":
            found = self._tune(key, sizes, names, run)
        else:
            return names[0]
        self._chosen[key] = found
        return found

    def matmul(self, m: int, n: int, inner: int, batch: int, aligned: bool,
               run: Callable[[TileConfig, bool, int], object], *,
               subgroup: Callable[[], bool] = lambda: False,
               split: bool = False) -> tuple[TileConfig, bool, int]:
        """The tile configuration of a batch of m x inner @ inner x n f32 products, whether it
        reads storage as vec4 (only when `aligned`; see `matmul_config.is_aligned`), and in how
        many slices it splits K (1: none).

        Candidates: `matmul_config.candidates` (the heuristic's `choose_config` first; the
        subgroup twins too where `subgroup()` says they work on this device), each tile that
        leaves the GPU short of workgroups once more with K split (`matmul_config.split_k`,
        only where `split`: the caller can add the partials), and the heuristic's tile with
        scalar access. `run(cfg, vec4, splits)` dispatches one.
        """
        limits = self.runtime.limits
        wg_bytes = limits.max_compute_workgroup_storage_size
        soft = software.software(self.runtime.adapter)
        if split:
            first, slices = matmul_config.choose_split(m, n, inner, batch, wg_bytes,
                                                       software=soft)
        else:
            first, slices = matmul_config.choose_config(m, n, inner, batch, wg_bytes,
                                                        software=soft), 1
        if self.mode == "off":
            return first, aligned, slices

        def label(cfg: TileConfig, count: int) -> str:
            return cfg.name + (f"{_SPLIT}{count}" if count > 1 else "")

        def names() -> list[str]:
            configs = matmul_config.candidates(m, n, inner, batch, wg_bytes,
                                               limits.max_compute_invocations_per_workgroup,
                                               subgroup())
            found = [label(first, slices)]
            for cfg in configs:
                counts = (1, matmul_config.split_k(cfg, m, n, inner, batch)[0]) if split else (1,)
                found += [label(cfg, c) for c in counts if label(cfg, c) not in found]
            return found + ([configs[0].name + _SCALAR] if aligned else [])

        family = "matmul" if aligned else "matmul_unaligned"
        name = self.pick(family, (m, n, inner, batch), DType.F32, names,
                         lambda s: run(*_tile(s, aligned)))
        return _tile(name, aligned)

    def workgroup(self, family: str, sizes: Sequence[int], dtype: DType, default: int,
                  run: Callable[[], object]) -> int:
        """The workgroup size of `family`'s kernel for a problem described by `sizes`: `default`
        (the family's heuristic) unless another of WORKGROUPS timed faster.

        `run()` runs the family's op once on the problem's tensors: while a candidate is timed,
        this returns that candidate, so the op dispatches it. Buckets of fewer than MIN_WORK
        elements keep `default`.
        """
        forced = self._forced.get(family)
        if forced is not None:
            return forced
        if self.mode == "off" or math.prod(bucket(sizes)) < MIN_WORK:
            return default
        most = self.runtime.limits.max_compute_invocations_per_workgroup

        def names() -> list[str]:
            return [str(default)] + [str(w) for w in WORKGROUPS if w != default and w <= most]

        return int(self.pick(family, sizes, dtype, names,
                             lambda s: self._forcing(family, int(s), run)))

    def reduction(self, family: str, x: GpuTensor, dim: int, default: int,
                  run: Callable[[], object]) -> int:
        """`workgroup` for a kernel that folds `dim` of x, one workgroup per row:
        sizes (rows, length)."""
        rows = math.prod(x.shape[:dim] + x.shape[dim + 1:])
        return self.workgroup(family, (rows, x.shape[dim]), x.dtype, default, run)

    # ---- timing ------------------------------------------------------------------------------
    def _forcing(self, family: str, value: int, run: Callable[[], object]) -> None:
        self._forced[family] = value
        try:
            run()
        finally:
            del self._forced[family]

    def _tune(self, key: Key, sizes: Sequence[int], names: Sequence[str],
              run: Callable[[str], object]) -> str:
        self.tuning += 1  # a capture in progress sees it (capture.py) and tries again later
        try:
            return self._tune_now(key, sizes, names, run)
        finally:
            self.tuning -= 1

    def _tune_now(self, key: Key, sizes: Sequence[int], names: Sequence[str],
                  run: Callable[[str], object]) -> str:
        start = self._clock()
        self.runtime.sync()  # the work queued before is not the candidates'
        times: dict[str, float] = {}
        for name in names:
            if times and self._clock() - start > self.budget_s:
                break
            times[name] = self._time(partial(run, name), min(times.values(), default=math.inf))
        best = min(times, key=times.__getitem__)  # on a tie the earlier: the heuristic first
        ms = {name: round(t * 1e3, 4) for name, t in times.items()}
        self._timings[key_name(key)] = ms
        self.stats.tuned += 1
        self.stats.timed += len(times)
        self.stats.seconds += self._clock() - start
        self.store.put(self.adapter, key_name(key),
                       {"choice": best, "ms": ms, "sizes": list(sizes)})
        return best

    def _time(self, run: Callable[[], object], best: float) -> float:
        """Seconds per run of one candidate (its first run, which compiles it, untimed)."""
        self._timed(run, 1)
        once = self._timed(run, 1)
        if once > 4 * best:
            return once  # far behind already: a second sample will not change the choice
        repeats = min(_MAX_REPEATS, int(_TARGET_S / max(once, 1e-9)))
        if repeats < 2:
            return min(once, self._timed(run, 1))
        return min(once, self._timed(run, repeats) / repeats)

    def _timed(self, run: Callable[[], object], repeats: int) -> float:
        start = self._clock()
        for _ in range(repeats):
            run()
        self.runtime.sync()
        return self._clock() - start


def _tile(name: str, aligned: bool) -> tuple[TileConfig, bool, int]:
    """A matmul candidate's config, whether it reads vec4s and its slices of K."""
    if name.endswith(_SCALAR):
        return matmul_config.tile(name[: -len(_SCALAR)]), False, 1
    cfg, _, count = name.partition(_SPLIT)
    return matmul_config.tile(cfg), aligned, int(count or 1)


def _describe(adapter: AdapterInfo) -> dict[str, str]:
    return {"name": adapter.name, "vendor": adapter.vendor, "backend": adapter.backend,
            "type": adapter.adapter_type, "driver": adapter.description}


def _problem(doc: object) -> str | None:
    """What is wrong with a parsed document of this version, or None."""
    if not isinstance(doc, dict) or not isinstance(doc.get("adapters"), dict):
        return "no 'adapters' object"
    for ident, section in doc["adapters"].items():
        if not isinstance(section, dict) or not isinstance(section.get("entries"), dict):
            return f"adapter {ident!r} has no 'entries' object"
        for key, entry in section["entries"].items():
            if not isinstance(entry, dict) or not isinstance(entry.get("choice"), str):
                return f"entry {key!r} has no 'choice'"
    return None


__all__ = ["BUDGET_S", "MIN_WORK", "WORKGROUPS", "Autotuner", "FileStore", "TuneStats",
           "TuneStore", "adapter_identity", "bucket", "key_name"]
