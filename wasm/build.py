"""Build the web bundle: the folder a page loads pyrite from (see DESIGN.md, "Browser").

    python -m pyrite.wasm build [--out DIR]       (pyrite export-web --out DIR: see cli.py)

writes a folder that is complete on its own, with every URL relative to `pyrite.js`:

    pyrite.js, worker.js, *.js  the loader (an ES module), the Web Worker and their modules
    pyrite.d.ts                 the JS API's types (when wasm/ has them)
    index.html                  an example page using the bundle (example.py)
    manifest.json               what the worker fetches, each file with its sha256 and size,
                                and under "files" every file of the bundle (path -> sha256)
                                but itself and its copies: what `export-web` may replace
    pyodide/                    the Pyodide runtime files a page really loads (pyodide_dist.py)
    wheels/<hash>/NAME.whl      the pure-Python pyrite wheel for the page, and micropip
    models/NAME.<hash>.bin      the demo models' records, and the other files they load
                                (models/NAME-labels.<hash>.txt)
    kernels/NAME.<hash>.json    the WGSL kernels each model runs (compiled while Pyodide boots)
    FILE.gz, FILE.br            precompressed copies where they save 10 % (compress.py)

The pyrite wheel is made here from the installed package's own files (no pip, no network):
`core` + `webgpu` + `shaders` + `wasm`'s page modules + `demos`' Python, without the server (it
needs Starlette), this tooling, the records (served apart, cached by hash) and the pages. Zip
entries carry a fixed date, so the same sources give the same bytes and the same hash: a
repeat visit finds its cached copy.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import tempfile
import uuid
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyrite
from pyrite import config
from pyrite.webgpu.browser import REQUESTED_FEATURES, REQUESTED_LIMITS

from . import (
    bytecode,
    compress,
    example,
    first_imports,
    live_bundle,
    minify,
    pyodide_dist,
    snapshot,
    stdlib,
)
from .pyodide_dist import PYODIDE_DIR, page_wheel
from .worker_bundle import bundle as bundle_worker

HERE = Path(__file__).resolve().parent
#: the packages of the browser wheel: import name -> folder, with the files each ships
_PACKAGES = ("pyrite", "pyrite.webgpu", "pyrite.shaders", "pyrite.wasm", "pyrite.demos")
_SKIP_DIRS = {"__pycache__", "node_modules", "page", "server"}
_SHIPPED_SUFFIXES = {".py", ".wgsl", ".json"}
_SKIP_FILES = {"package.json", "package-lock.json"}
#: the host's tooling in pyrite.wasm (building and exporting the bundle): no use in a page
_HOST_ONLY = {f"pyrite/wasm/{name}.py" for name in
              ("__main__", "build", "bytecode", "cli", "compress", "example", "export",
               "first_imports", "minify", "pyodide_dist", "snapshot", "stdlib", "worker_bundle")}
_ZIP_DATE = (2020, 2, 2, 0, 0, 0)  # fixed, so equal sources give equal wheels
#: pure-Python wheels the page needs besides pyrite, at the versions the pinned Pyodide's lock
#: file names; fetched once from PyPI into the cache folder
_PAGE_WHEELS = ("micropip",)


@dataclass(frozen=True)
class Built:
    """One file of the bundle: its path relative to the bundle root and its sha256."""

    path: str
    sha256: str
    size: int


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _package_root(name: str) -> Path:
    module = __import__(name, fromlist=["__file__"])
    return Path(str(module.__file__)).resolve().parent


def _package_files() -> list[tuple[str, Path]]:
    """(archive name, file) for every file of the browser wheel, sorted."""
    files: list[tuple[str, Path]] = []
    nested = {p.split(".", 1)[1] for p in _PACKAGES if "." in p}  # walked on their own
    for name in _PACKAGES:
        root = _package_root(name)
        prefix = name.replace(".", "/")
        skip = _SKIP_DIRS | (nested if name == "pyrite" else set())
        for folder, dirs, names in os.walk(root):
            here = Path(folder)
            rel = here.relative_to(root)
            # nested packages of `pyrite` that live in their own folders are added by name
            dirs[:] = sorted(d for d in dirs if d not in skip and
                             (here / d / "__init__.py").exists())
            for file in sorted(names):
                path = here / file
                name = f"{prefix}/{rel.as_posix()}/{file}".replace("/./", "/")
                if (path.suffix in _SHIPPED_SUFFIXES and file not in _SKIP_FILES
                        and name not in _HOST_ONLY):
                    files.append((name, path))
    return sorted(files)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(out_dir: Path) -> Path:
    """The pure-Python pyrite wheel for the page, written into `out_dir`."""
    version = pyrite.__version__
    dist = f"pyrite-{version}.dist-info"
    # the page's copy of the sources leaves out their documentation (minify.py): a first visit
    # downloads about 190 kB less
    entries: list[tuple[str, bytes]] = [
        (n, minify.strip_source(p.read_text(encoding="utf-8")).encode() if n.endswith(".py")
         else p.read_bytes()) for n, p in _package_files()]
    entries += [
        (f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: pyrite\nVersion: {version}\n"
                             f"Summary: pyrite for the browser (core, webgpu, shaders, demos)\n"
                             f"Requires-Python: >=3.11\n".encode()),
        (f"{dist}/WHEEL", b"Wheel-Version: 1.0\nGenerator: pyrite.wasm.build\n"
                          b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
        (f"{dist}/entry_points.txt", b"[pyrite.backends]\nwebgpu = pyrite.webgpu:create\n"),
    ]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"pyrite-{version}-py3-none-any.whl"
    path.write_bytes(_zipped(entries, dist))
    return path


def _zipped(entries: list[tuple[str, bytes]], dist: str) -> bytes:
    """A wheel of `entries` and their RECORD (`dist`: the .dist-info folder), stored."""
    record = "\n".join(_record_line(n, d) for n, d in entries) + f"\n{dist}/RECORD,,\n"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:  # stored: see _stored
        for name, data in [*entries, (f"{dist}/RECORD", record.encode())]:
            info = zipfile.ZipInfo(name, _ZIP_DATE)
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    return out.getvalue()


def _bytecode_wheel(wheel: bytes, pyodide_dir: Path, cache: Path,
                    models: Sequence[str]) -> bytes:
    """The page's pyrite wheel with the modules a first visit imports (first_imports.py) as
    the page's Python's bytecode instead of their sources (bytecode.py, run on the wheel:
    `NAME.pyc` where `NAME.py` was, compiled for Pyodide's site-packages, asserts kept), its
    RECORD made again; as it was without Node."""
    if shutil.which("node") is None:
        return wheel
    modules = first_imports.first_visit_modules(models, wheel, cache.with_name("first-imports"))
    compiled = bytecode.precompile(pyodide_dir, wheel, modules, cache.with_name("bytecode"),
                                   where="site-packages", optimize=0)
    if compiled is None:
        return wheel
    with zipfile.ZipFile(io.BytesIO(compiled)) as zf:
        entries = [(i.filename, zf.read(i)) for i in zf.infolist()]
    dist = next(n.split("/")[0] for n, _ in entries if n.endswith(".dist-info/RECORD"))
    return _zipped([(n, d) for n, d in entries if n != f"{dist}/RECORD"], dist)


def _stored(wheel: bytes) -> bytes:
    """`wheel` with its members stored, not deflated (the same names, order, dates and modes).

    The page writes a wheel's files itself (wheels.js): a stored member is a slice of the
    wheel, while inflating 368 deflated ones took the worker 0.6 s on SwiftShader. The bytes
    travel compressed all the same: the bundle's .gz and .br copies of a stored wheel are
    smaller than those of a deflated one (the whole archive compresses as one stream)."""
    packed = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(wheel)) as source, \
            zipfile.ZipFile(packed, "w", zipfile.ZIP_STORED) as out:
        for info in source.infolist():
            copy = zipfile.ZipInfo(info.filename, info.date_time)
            copy.external_attr = info.external_attr
            out.writestr(copy, source.read(info))
    return packed.getvalue()


#: the adapter types a bundle's kernel lists are recorded for (worker.js tells them apart the
#: way `BrowserRuntime` does: SwiftShader is "CPU")
ADAPTER_TYPES = ("GPU", "CPU")


def default_cache() -> Path:
    """Where fetched page wheels are kept: `page-wheels` in pyrite's cache folder
    ($XDG_CACHE_HOME/pyrite or ~/.cache/pyrite)."""
    return Path(config.cache_dir()) / "page-wheels"


def default_bundle() -> Path:
    """Where `build` writes and `pyrite serve` reads the bundle by default: $PYRITE_WEB_DIR, or
    `web` in pyrite's cache folder."""
    given = config.web_dir()
    if given:
        return Path(given)
    return default_cache().parent / "web"


def record_kernels(name: str) -> list[dict[str, object]]:
    """The WGSL kernels demo model `name` compiles to load and predict once, found by running
    it on a `RecordingRuntime` (no GPU): what the page compiles while Pyodide boots. Recorded
    as a page on a GPU and as a page on SwiftShader would run it (`pyrite.webgpu.software`:
    some kernel choices differ); each kernel lists the adapter types ("GPU", "CPU") that run
    it, and the worker compiles those of its own adapter."""
    from pyrite.demos import registry
    from pyrite.webgpu import WebGpu, registration
    from pyrite.webgpu.recorder import RecordingRuntime

    demo = registry.get(name)
    found: dict[tuple[str, str], list[str]] = {}
    for kind in ADAPTER_TYPES:
        runtime = RecordingRuntime(adapter_type=kind)
        model = demo.load(registration.default(WebGpu(runtime=runtime, seed=0)))
        demo.predict(model, demo.example)
        for kernel in runtime.kernels:
            found.setdefault(kernel, []).append(kind)
    return [{"entry": entry, "source": source, "adapters": kinds}
            for (entry, source), kinds in found.items()]


def _place(out: Path, folder: str, name: str, data: bytes, hashed_name: bool) -> Built:
    """Write `data` under `out/folder`, named by its hash, and describe it."""
    sha = _sha256(data)
    if hashed_name:
        stem, _, suffix = name.partition(".")
        rel = f"{folder}/{stem}.{sha[:16]}.{suffix}"
    else:
        rel = f"{folder}/{sha[:16]}/{name}"
    target = out / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return Built(rel, sha, len(data))


def pyodide_version() -> str:
    """The version of the installed Pyodide npm package."""
    return pyodide_dist.version()


def check_models(models: Sequence[str] | None) -> list[str]:
    """The demo models to ship: `models` without repeats (default every one); ValueError
    naming the known ones for an unknown name, and for a model named here whose files are
    not installed (saying where to put them)."""
    from pyrite.demos import registry

    known = registry.names()
    if models is None:
        return known
    unknown = [m for m in models if m not in known]
    if unknown:
        raise ValueError(f"unknown model {', '.join(map(repr, unknown))}; the known models "
                         f"are: {', '.join(known)}")
    chosen = list(dict.fromkeys(models))
    for name in chosen:
        missing = registry.get(name).missing()
        if missing:
            raise ValueError(missing)
    return chosen


def _copy(source: Path, stage: Path, rel: str) -> Built:
    target = stage / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return _described(stage, rel)


def _described(stage: Path, rel: str) -> Built:
    data = (stage / rel).read_bytes()
    return Built(rel, _sha256(data), len(data))


def _trim_stdlib(folder: Path, wheels: list[Path], cache: Path) -> dict[str, object] | None:
    """Trim `folder`'s python_stdlib.zip to what pyrite imports (stdlib.py), keeping the whole
    of it as stdlib.FULL beside it; its manifest entry, or None (left whole) without Node."""
    modules = stdlib.imported(folder, wheels, cache.with_name("stdlib"))
    if modules is None:
        return None
    zipped = folder / "python_stdlib.zip"
    whole = folder / stdlib.FULL
    os.replace(zipped, whole)
    trimmed, left_out = stdlib.trim(whole.read_bytes(), modules)
    zipped.write_bytes(trimmed)  # Pyodide under Node boots from it while precompiling it
    # what the page imports as bytecode: its boot compiles none of it (bytecode.py)
    compiled = bytecode.precompile(folder, trimmed, modules, cache.with_name("bytecode"))
    if compiled is not None:
        zipped.write_bytes(compiled)
    data = whole.read_bytes()
    return {"path": f"pyodide/{stdlib.FULL}", "sha256": _sha256(data), "size": len(data),
            "modules": left_out}


def _scripts() -> list[Path]:
    """The JavaScript of the wasm package (every `*.js` beside this file, not node_modules)
    and its type declarations, copied to the bundle's root as they are."""
    found = sorted(HERE.glob("*.js"))
    return found + [p for p in [HERE / "pyrite.d.ts"] if p.is_file()]


def _precompress_one(path: Path) -> None:
    """Write the worthwhile compressed copies of the one file `path` (compress.precompress
    does a whole folder)."""
    data = path.read_bytes()
    for encoding, squeeze in compress.compressors().items():
        packed = squeeze(data)
        if compress.worth_keeping(len(data), len(packed)):
            path.with_name(path.name + compress.SUFFIXES[encoding]).write_bytes(packed)


def _list_files(stage: Path) -> dict[str, str]:
    """Every file in `stage` (relative path -> sha256), sorted: the manifest's "files"."""
    return {p.relative_to(stage).as_posix(): _sha256(p.read_bytes())
            for p in sorted(stage.rglob("*")) if p.is_file()}


def _swap(stage: Path, out: Path) -> None:
    """Put the finished `stage` at `out`, replacing an older bundle there (two renames)."""
    if not out.exists():
        os.replace(stage, out)
        return
    old = out.with_name(f".{out.name}.old-{uuid.uuid4().hex[:12]}")  # never a user's name
    os.replace(out, old)
    os.replace(stage, out)
    shutil.rmtree(old, ignore_errors=True)


def build(out: Path | str, cache: Path | None = None, *, models: Sequence[str] | None = None,
          pyodide_dir: Path | None = None, precision: str = "shipped",
          with_snapshot: bool = False, live: bool = False) -> dict[str, object]:
    """Write the web bundle into `out` (replacing an older one whole and atomically: the
    folder is pyrite's, as `pyrite serve`'s is; `export-web` builds into a new folder and moves
    the files into the user's) and return its manifest. `live`: running servers may be
    serving `out`, so it is published as a link to a versioned folder (live_bundle.py), never
    missing or half-replaced for them.

    `models`: the demo models to ship (default all, less those whose files are not installed,
    which the manifest lists under "unavailable" with the reason; ValueError naming the known
    ones for an unknown name, or saying where to put a chosen model's files, before anything
    is written); `pyodide_dir`: the Pyodide runtime to copy from
    (default the npm package); `precision`: the models' records, as shipped or "int8"
    / "int4" quantized (pyrite.demos.quantize); `cache`: where fetched page wheels are kept
    (default `default_cache()`; compressed copies of large files are kept beside it, in
    `compressed/`, and snapshots in `snapshots/`); `with_snapshot`: ship a Python memory
    snapshot made under Node (snapshot.py), which a first visit restores instead of booting
    Python.
    """
    from pyrite.demos import registry
    from pyrite.demos.quantize import page_record

    names = check_models(models)
    unavailable = {name: reason for name in names
                   if (reason := registry.get(name).missing()) is not None}
    runtime = pyodide_dist.runtime_files(pyodide_dir)
    out = Path(out)
    cache = cache or default_cache()
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".web-", dir=out.parent))
    try:
        stage.chmod(0o755)  # mkdtemp's 0700 would hide the bundle from a web server's user
        for path in runtime:
            _copy(path, stage, f"pyodide/{path.name}")
        with tempfile.TemporaryDirectory() as tmp:
            wheel = build_wheel(Path(tmp))
            built = [_place(stage, "wheels", wheel.name, _bytecode_wheel(
                wheel.read_bytes(), stage / "pyodide", cache,
                [n for n in names if n not in unavailable]), False)]
        wheels = []
        for name in _PAGE_WHEELS:
            dep = page_wheel(name, cache, pyodide_dir)
            wheels.append({"name": name, **vars(_place(stage, "wheels", dep.name,
                                                       _stored(dep.read_bytes()), False))})
        wheels.append({"name": "pyrite", **vars(built[0])})
        wheel_files = [stage / str(w["path"]) for w in wheels]
        full_stdlib = _trim_stdlib(stage / "pyodide", wheel_files, cache)
        pyodide_files = [vars(_described(stage, f"pyodide/{p.name}")) for p in runtime]
        shipped_snapshot: dict[str, object] | None = None
        if with_snapshot:  # keyed by what it holds: this Pyodide and these wheels
            made = snapshot.make(wheel_files, stage / "pyodide", cache.with_name("snapshots"))
            shipped_snapshot = {**vars(_place(stage, "snapshot", snapshot.NAME, made.packed,
                                              True)),
                                "memory": made.memory, "trampoline": made.trampoline,
                                "for": {"pyodide": pyodide_dist.version(pyodide_dir),
                                        "wheels": [w["sha256"] for w in wheels]}}
        shipped: dict[str, object] = {}
        for name in names:
            if name in unavailable:
                continue
            model = registry.get(name)
            record = page_record(name, precision, model.record)
            placed = _place(stage, "models", f"{name}.bin", record, True)
            files = {key: vars(_place(stage, "models", f"{name}-{key}{path.suffix}",
                                      path.read_bytes(), True))
                     for key, path in model.files().items()}
            kernels = json.dumps(record_kernels(name)).encode()
            shipped[name] = {**vars(placed), "precision": precision,
                             "description": model.description,
                             "inputs": model.inputs, "files": files,
                             "kernels": vars(_place(stage, "kernels", f"{name}.json", kernels,
                                                    True))}
        for script in _scripts():
            shutil.copyfile(script, stage / script.name)
        # the worker and its modules as one file: one request instead of three rounds of them
        (stage / "worker.js").write_text(bundle_worker(HERE), encoding="utf-8")
        (stage / "index.html").write_text(example.index_html(names))
        manifest: dict[str, object] = {
            "pyrite": pyrite.__version__,
            "pyodide": {"version": pyodide_dist.version(pyodide_dir), "url": "pyodide/",
                        "files": pyodide_files,
                        # the whole standard library, for imports the trimmed one lacks
                        **({"stdlib": full_stdlib} if full_stdlib else {})},
            "gpu": {"features": list(REQUESTED_FEATURES), "limits": list(REQUESTED_LIMITS)},
            "wheels": wheels,
            "models": shipped,
            # the demo models left out because their files are not installed: why, and where
            # to put them (the demo pages say so)
            "unavailable": unavailable,
        }
        if shipped_snapshot is not None:
            manifest["snapshot"] = shipped_snapshot
        compress.precompress(stage, cache.with_name("compressed"))
        # every file but the manifest and its copies, the compressed ones included: what a
        # later `export-web` into the same folder may replace (a file changed since is kept)
        manifest["files"] = _list_files(stage)
        (stage / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        _precompress_one(stage / "manifest.json")
        if live:
            live_bundle.publish(stage, out)
        else:
            _swap(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return manifest


__all__ = ["ADAPTER_TYPES", "PYODIDE_DIR", "build", "build_wheel", "check_models",
           "default_bundle", "default_cache", "page_wheel", "pyodide_version", "record_kernels"]
