"""Settings read from the environment, in one place (listed in the README's settings table)."""

from __future__ import annotations

import os

from .errors import ConfigError


def backend_name() -> str:
    """PYRITE_BACKEND: the device tensors go to when none is named (default 'numpy')."""
    return os.environ.get("PYRITE_BACKEND", "numpy").strip() or "numpy"


def debug_flags() -> set[str]:
    """PYRITE_DEBUG: comma-separated debug switches ('wgsl' prints generated kernels)."""
    return {f.strip() for f in os.environ.get("PYRITE_DEBUG", "").split(",") if f.strip()}


def debug_traceback() -> bool:
    """PYRITE_DEBUG=1 (or 'traceback'): a command's error prints its traceback too."""
    return bool(debug_flags() & {"1", "traceback"})


def data_dir() -> str:
    """PYRITE_DATA: the folder holding datasets (`$PYRITE_DATA/mnist/*.gz`); empty: unset."""
    return os.environ.get("PYRITE_DATA", "").strip()


def webgpu_adapter() -> str:
    """PYRITE_WEBGPU_ADAPTER: which adapter the webgpu backend takes ("gl", "vulkan,1", ...)."""
    return os.environ.get("PYRITE_WEBGPU_ADAPTER", "").strip()


def webgpu_devices() -> str:
    """PYRITE_WEBGPU_DEVICES: the adapter index of each `webgpu:N` in turn ("0,0": webgpu:0 and
    webgpu:1 are two devices on adapter 0); empty means webgpu:N is adapter N."""
    return os.environ.get("PYRITE_WEBGPU_DEVICES", "").strip()


def required_backends() -> set[str]:
    """PYRITE_REQUIRE: backends whose absence fails the tests instead of skipping them."""
    return {f.strip() for f in os.environ.get("PYRITE_REQUIRE", "").split(",") if f.strip()}


def web_dir() -> str:
    """PYRITE_WEB_DIR: where `pyrite serve` builds the web bundle; empty: unset."""
    return os.environ.get("PYRITE_WEB_DIR", "").strip()


def autotune_mode() -> str:
    """PYRITE_AUTOTUNE: 'on' (default: benchmark kernel variants on first use, keep the fastest),
    'cached' (use choices already in the cache, benchmark nothing) or 'off' (the built-in
    heuristics: no benchmarking, no cache file read or written)."""
    value = os.environ.get("PYRITE_AUTOTUNE", "").strip().lower()
    if value in ("", "on", "1", "true", "yes"):
        return "on"
    if value in ("off", "0", "false", "no"):
        return "off"
    if value == "cached":
        return "cached"
    raise ConfigError(f"PYRITE_AUTOTUNE={value!r} is not a setting; use on, cached or off")


def models_dir() -> str:
    """PYRITE_MODELS: the folder holding model files users provide, one sub-folder per model
    (`$PYRITE_MODELS/squeezenet1.1/squeezenet1.1.onnx`); empty: unset."""
    return os.environ.get("PYRITE_MODELS", "").strip()


def cache_dir() -> str:
    """pyrite's cache folder: `$XDG_CACHE_HOME/pyrite`, or `~/.cache/pyrite` without
    XDG_CACHE_HOME (or with a relative one, which the XDG spec says to ignore)."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pyrite")


def autotune_cache() -> str:
    """PYRITE_AUTOTUNE_CACHE: the autotune JSON file; unset: `$XDG_CACHE_HOME/pyrite/autotune.json`,
    or `~/.cache/pyrite/autotune.json` without XDG_CACHE_HOME (or with a relative one)."""
    given = os.environ.get("PYRITE_AUTOTUNE_CACHE", "").strip()
    if given:
        return os.path.expanduser(given)
    return os.path.join(cache_dir(), "autotune.json")


def compile_enabled() -> bool:
    """PYRITE_COMPILE: 'on' (default): `pyrite.compile` captures steps and replays them (the
    Learner, inference and pages use it); 'off': every compiled function runs eagerly."""
    return _switch("PYRITE_COMPILE")


def fusion_enabled() -> bool:
    """PYRITE_FUSION: 'on' (default): the webgpu device records ops lazily and fuses them into
    generated kernels; 'off': one kernel per op, run at once (the raw WebGpu backend)."""
    return _switch("PYRITE_FUSION")


def _switch(name: str) -> bool:
    """An on/off setting that is on when unset."""
    value = os.environ.get(name, "").strip().lower()
    if value in ("", "on", "1", "true", "yes"):
        return True
    if value in ("off", "0", "false", "no"):
        return False
    raise ConfigError(f"{name}={value!r} is not a setting; use on or off")


def blas_threads() -> int | None:
    """PYRITE_BLAS_THREADS: threads the numpy backend's BLAS may use; 'auto' (default): the
    cores this process may run on less the machine's current load, at least 1 (None here),
    unless OPENBLAS_NUM_THREADS, OMP_NUM_THREADS or MKL_NUM_THREADS already say."""
    value = os.environ.get("PYRITE_BLAS_THREADS", "").strip().lower()
    if value in ("", "auto"):
        return None
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise ConfigError(f"PYRITE_BLAS_THREADS={value!r} is not a setting; use auto or a "
                      f"positive number of threads")


def numpy_heap() -> str:
    """PYRITE_NUMPY_HEAP: 'keep' (default): the numpy backend asks glibc's malloc to keep freed
    memory for reuse instead of returning each large array to the system; 'system': leave malloc
    as it is."""
    value = os.environ.get("PYRITE_NUMPY_HEAP", "").strip().lower() or "keep"
    if value not in ("keep", "system"):
        raise ConfigError(f"PYRITE_NUMPY_HEAP={value!r} is not a setting; use keep or system")
    return value
