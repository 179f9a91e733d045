"""How many threads the numpy backend's BLAS runs: the `PYRITE_BLAS_THREADS` setting applied.

OpenBLAS starts one thread per core and spins them while it waits. When other processes want
the same cores (several pyrite workers, a browser, a test run beside a benchmark) its threads
fight them, and a matmul can get twenty times slower. So the numpy backend limits BLAS when it
is first built:

- `PYRITE_BLAS_THREADS=N`: N threads;
- `auto` (the default): the cores this process may use less the current one-minute load
  average, at least 1, so a second process on a busy machine takes what is left rather than
  everything; left alone when `OPENBLAS_NUM_THREADS`, `OMP_NUM_THREADS` or `MKL_NUM_THREADS` is
  set (the user has said).

The limit goes through `threadpoolctl` when it is installed (`pip install pyrite[numpy]`); without
it, the BLAS environment variables are set when numpy is not imported yet, and OpenBLAS's own
setter is called (found among the loaded libraries, Linux) when it is. Under
Pyodide there is one thread and nothing to do. `set_blas_threads(n)` changes it later.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

from .. import config

_ENV_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_LIMIT: list[Any] = []  # the threadpoolctl limiter in force, kept alive
_APPLIED: list[bool] = []  # the setting is applied once per process
_BUDGET: list[int] = []  # the count last set through set_blas_threads


def default_threads() -> int | None:
    """The thread count `PYRITE_BLAS_THREADS` asks for now; None: leave BLAS as it is."""
    asked = config.blas_threads()
    if asked is not None:
        return asked
    if any(os.environ.get(v, "").strip() for v in _ENV_VARS):
        return None
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows, Pyodide
        cores = os.cpu_count() or 1
    try:
        busy = round(os.getloadavg()[0])
    except (AttributeError, OSError):
        busy = 0
    return max(1, min(cores, cores - busy))


def set_blas_threads(n: int) -> bool:
    """Limit BLAS to `n` threads; False when it cannot be changed in this process (no
    threadpoolctl and numpy already imported)."""
    if sys.platform == "emscripten":
        return True
    _BUDGET[:] = [n]
    try:
        from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]  # no stubs
    except ImportError:
        if "numpy" in sys.modules:  # too late for the variables: OpenBLAS's own setter
            setter = _openblas_setter()
            if setter is None:
                return False
            setter(n)
            return True
        for var in _ENV_VARS[:2]:
            os.environ[var] = str(n)
        return True
    with warnings.catch_warnings():  # its notes on OpenMP runtimes are no concern of ours
        warnings.simplefilter("ignore")
        _LIMIT[:] = [threadpool_limits(limits=n, user_api="blas")]
    return True


def apply_setting() -> None:
    """Apply `PYRITE_BLAS_THREADS` once per process; the numpy backend calls it before it
    imports numpy (so the environment variables still count) and after (threadpoolctl)."""
    if _APPLIED:
        return
    n = default_threads()
    if n is None:
        _APPLIED.append(True)
        return
    set_blas_threads(n)
    if "numpy" in sys.modules:
        _APPLIED.append(True)


def budget() -> int:
    """The threads this process's numpy work may use: the count set here, else the BLAS
    variable the user set, else 1 (unknown: assume nothing spare)."""
    if _BUDGET:
        return _BUDGET[0]
    for var in _ENV_VARS:
        value = os.environ.get(var, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1


def blas_switch() -> Any:
    """A function `set(n)` that changes BLAS's thread count at once (a C call per library, under
    a microsecond), or None where it cannot be found (Pyodide, no BLAS loaded): the convolution
    pool uses it to give each of its workers a share of the budget for one parallel call.
    Through threadpoolctl when installed, else OpenBLAS's own setter found in the libraries
    this process has loaded (Linux)."""
    if _SWITCH:
        return _SWITCH[0]
    found = None
    if sys.platform != "emscripten":
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            found = _openblas_setter()
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                libs = ThreadpoolController().select(user_api="blas").lib_controllers
            if libs:
                def found(n: int) -> None:
                    for lib in libs:
                        lib.set_num_threads(n)
    _SWITCH[:] = [found]
    return found


#: the names OpenBLAS builds export their thread setter under (numpy's wheels: scipy_openblas64)
_SETTERS = ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_",
            "scipy_openblas_set_num_threads", "openblas_set_num_threads")


def _openblas_setter() -> Any:
    """OpenBLAS's `set_num_threads` from a library in /proc/self/maps, or None."""
    import ctypes

    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _SETTERS:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.argtypes, fn.restype = [ctypes.c_int], None
                return fn
    return None


_SWITCH: list[Any] = []  # blas_switch's answer, found once
