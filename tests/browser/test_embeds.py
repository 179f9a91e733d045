"""pyrite in someone else's page: the exported bundle under a plain static server at a
sub-path, one script tag and the elements, repeat visits from the cache (offline too), a
changed bundle picked up, cross-origin embedding from `pyrite serve --allow-origin`, and the
messages a broken embed gets."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from . import harness

pytestmark = pytest.mark.skipif(harness.unavailable() is not None,
                                reason=str(harness.unavailable()))

SUB = "tools/pyrite"  # the bundle's sub-path on the static host

# the worker's Python snapshots (wasm/snapshot_store.js, IndexedDB): ["keys"] lists the stored
# entries (records and memories), ["delete", key] removes one, ["put", key, n] writes n zero
# bytes as a memory. Only once the worker made the database (opening it first would make an
# empty one); it is closed after each call (pyrite.clearCache() deletes it).
SNAPSHOT_STORE = """([op, key, size]) => new Promise((resolve, reject) => {
  const opened = indexedDB.open('pyrite-snapshots');
  opened.onerror = () => reject(opened.error);
  opened.onsuccess = () => {
    const db = opened.result;
    const tx = db.transaction('parts', op === 'keys' ? 'readonly' : 'readwrite');
    const store = tx.objectStore('parts');
    const request = op === 'keys' ? store.getAllKeys() : op === 'delete' ? store.delete(key)
      : store.put(new Blob([new Uint8Array(size)]), key);
    tx.oncomplete = () => {
      db.close();
      resolve(op === 'keys' ? request.result.filter((k) => k.includes('/pyrite-python.snapshot?'))
        .sort() : null);
    };
    tx.onabort = () => { db.close(); reject(tx.error); };
  };
})"""

HOST = """<!doctype html>
<html><head><meta charset="utf-8"><title>host</title><link rel="icon" href="data:,">
<script type="module" src="{bundle}pyrite.js"></script></head>
<body>
<h1>A page that embeds pyrite</h1>
<pyrite-script id="script" device="webgpu">
import pyrite
x = pyrite.tensor([[1.0, 2.0], [3.0, 4.0]])
print("device:", x.device.name)
display(x @ x)
</pyrite-script>
<pyrite-mnist id="mnist"></pyrite-mnist>
<p id="heard"></p>
<script type="module">
  import * as pyrite from "{bundle}pyrite.js";
  window.pyrite = pyrite;
  document.addEventListener("prediction", (e) => {{
    document.getElementById("heard").textContent = `heard ${{e.detail.label}}`;
  }});
  window.computed = (async () => {{
    {before}
    await pyrite.load({{device: "webgpu"}});
    return pyrite.run("import pyrite\\n"
      + "(pyrite.arange(0, 6).reshape([2, 3]).float() * 0.5).sum_dim(1).to_list()");
  }})();
</script>
</body></html>
"""


def export(out: Path, *models: str) -> subprocess.CompletedProcess[str]:
    """`export-web --out OUT --model M ...` (a name starting with -- is passed as an option)."""
    args = [a for m in models for a in ((m,) if m.startswith("--") else ("--model", m))]
    return subprocess.run([sys.executable, "-m", "pyrite.wasm", "export-web", "--out", str(out),
                           *args], capture_output=True, text=True, timeout=300)


class StaticServer:
    """`python -m http.server` on 127.0.0.1 (no pyrite server anywhere)."""

    def __init__(self, root: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1",
             "--directory", str(root)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # Serving HTTP on 127.0.0.1 port N (...)
        self.url = f"http://127.0.0.1:{int(line.split(' port ')[1].split()[0])}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A static site with the exported bundle at /tools/pyrite/ and a host page at /."""
    root = tmp_path_factory.mktemp("site")
    done = export(root / SUB, "mnist")
    assert done.returncode == 0, done.stderr
    assert "first visit" in done.stdout
    (root / "index.html").write_text(HOST.format(bundle=f"/{SUB}/", before=""))
    server = StaticServer(root)
    yield root, server.url
    server.stop()


@pytest.fixture()
def new_page(launch_chromium: Callable[..., Any]) -> Iterator[Callable[..., Any]]:
    """Pages in a fresh browser context (its own cache), each recording console errors."""
    contexts: list[Any] = []
    browser = launch_chromium()

    def make(webgpu: bool = True, **options: Any) -> Any:
        context = (browser if webgpu else launch_chromium(webgpu=False)).new_context(**options)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(180_000)
        page.errors = []
        page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
        return page

    yield make
    for context in contexts:
        context.close()


def test_exported_bundle_works_from_a_plain_static_server(site: tuple[Path, str],
                                                          new_page: Callable[..., Any]) -> None:
    root, url = site
    bundle = root / SUB
    assert (bundle / "pyodide" / "pyodide.asm.wasm").exists()
    assert not list(bundle.rglob("*.d.ts.map")) and not (bundle / "pyodide" / "ffi.d.ts").exists()
    page = new_page()
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url))
    page.goto(f"{url}/")
    assert page.evaluate("window.computed") == [[1.5], [6.0]]  # pyrite.run on webgpu
    page.wait_for_selector("#script[data-state=done]")
    shown = page.evaluate("document.getElementById('script').shadowRoot.textContent")
    assert "device: webgpu" in shown
    cells = page.evaluate("[...document.getElementById('script').shadowRoot"
                          ".querySelectorAll('td')].map((td) => td.textContent)")
    assert cells == ["7", "10", "15", "22"]
    # the widget predicts a drawn digit and the host page hears it
    page.evaluate("document.getElementById('mnist').ready")
    box = page.evaluate("(() => { const r = document.getElementById('mnist').shadowRoot"
                        ".querySelector('canvas').getBoundingClientRect();"
                        " return [r.x, r.y, r.width]; })()")
    x, y, side = box
    page.mouse.move(x + side * 0.5, y + side * 0.2)
    page.mouse.down()
    page.mouse.move(x + side * 0.5, y + side * 0.8, steps=12)  # a "1"
    page.mouse.up()
    page.wait_for_function("document.getElementById('heard').textContent.startsWith('heard')")
    assert page.inner_text("#heard") == "heard 1"
    assert page.evaluate("document.getElementById('mnist').lastResult.backend") == "webgpu (page)"
    # the script, the widget and pyrite.run share one worker (a second one makes the next
    # visit's Python snapshot meanwhile, and is gone when it is stored)
    assert page.evaluate("pyrite.nextVisitReady()")["stored"] is True
    deadline = time.monotonic() + 10  # a terminated worker leaves the list a moment later
    while len(page.workers) != 1:
        assert time.monotonic() < deadline, page.workers
        page.wait_for_timeout(20)
    assert page.errors == []
    # the script, the widget and pyrite.run imported only what the trimmed standard library
    # holds: its whole copy (in the bundle for other imports) was never fetched
    assert (bundle / "pyodide" / "python_stdlib-full.zip").is_file()
    assert any(u.endswith("/pyodide/python_stdlib.zip") for u in fetched)
    assert not [u for u in fetched if "python_stdlib-full" in u]


def test_repeat_visit_reads_the_cache_and_works_offline(site: tuple[Path, str],
                                                        new_page: Callable[..., Any]) -> None:
    root, url = site
    (root / SUB / "offline.html").write_text(HOST.format(bundle="./",
                                                         before="await pyrite.enableOffline();"))
    page = new_page()
    fetched: list[str] = []
    page.on("requestfinished", lambda r: fetched.append(r.url))
    page.goto(f"{url}/{SUB}/offline.html")
    assert page.evaluate("window.computed") == [[1.5], [6.0]]
    first = [u for u in fetched if "/wheels/" in u or "/models/" in u or "pyodide.asm" in u]
    assert first  # the first visit downloaded the runtime, wheels and records
    # a second worker makes the next visit's Python snapshot once the page is ready
    made = page.evaluate("pyrite.nextVisitReady()")
    assert made["stored"] is True and made["bytes"] > 30e6, made
    kept = page.evaluate("caches.open('pyrite').then((c) => c.keys()).then((ks) => ks.length)")
    assert kept == 8  # manifest, the 3 Pyodide files it fetches, 2 wheels, record, kernels
    # and, in IndexedDB, the snapshot of Python (its memory and its record)
    assert len(page.evaluate(SNAPSHOT_STORE, ["keys"])) == 2
    # a repeat visit: nothing that did not change is downloaded again
    fetched.clear()
    page.reload()
    assert page.evaluate("window.computed") == [[1.5], [6.0]]
    # Python came back from the first visit's snapshot instead of booting
    timings = page.evaluate("pyrite.load().then((got) => got.timings)")
    assert timings["snapshot"] is True, timings
    again = [u for u in fetched if ("/wheels/" in u or "/models/" in u or u.endswith(".wasm")
                                    or u.endswith(".zip")) and "sw" not in u]
    assert again == []
    # offline: the page, the bundle and Python still answer
    page.context.set_offline(True)
    page.reload()
    assert page.evaluate("window.computed") == [[1.5], [6.0]]
    page.wait_for_selector("#script[data-state=done]")
    page.context.set_offline(False)
    # clearCache() forgets it all: the next visit downloads the runtime again
    assert page.evaluate("pyrite.clearCache()") is True
    assert page.evaluate("caches.keys()") == []
    # and the kept Python snapshot (the autotune choices stay: they are not the bundle's)
    assert "pyrite-snapshots" not in page.evaluate(
        "indexedDB.databases().then((d) => d.map((x) => x.name))")


def test_a_new_bundle_version_replaces_the_cached_one(site: tuple[Path, str],
                                                      new_page: Callable[..., Any],
                                                      tmp_path: Path) -> None:
    root, url = site
    page = new_page()
    page.goto(f"{url}/")
    assert page.evaluate("window.computed") == [[1.5], [6.0]]
    old = page.evaluate("pyrite.manifest().then((m) => m.wheels.map((w) => w.path))")
    assert page.evaluate("pyrite.nextVisitReady()")["stored"] is True  # for the old wheels
    # re-export with a changed pyrite wheel: a marker module added to the package for this run
    marker = Path(__import__("pyrite.wasm").wasm.__file__).with_name("_embed_marker.py")
    marker.write_text("VALUE = 42\n")
    try:
        assert export(root / SUB, "mnist").returncode == 0
    finally:
        marker.unlink()
    (root / "index.html").write_text(HOST.format(bundle=f"/{SUB}/", before=""))
    page.reload()
    assert page.evaluate("window.computed") == [[1.5], [6.0]]
    new = page.evaluate("pyrite.manifest().then((m) => m.wheels.map((w) => w.path))")
    assert new != old
    assert page.evaluate("pyrite.run('import pyrite.wasm._embed_marker as m\\nm.VALUE')") == 42
    # the first visit's Python snapshot was made for the old wheels: not restored, Python booted
    assert page.evaluate("pyrite.load().then((got) => got.timings.snapshot)") is False
    # the old wheel's cache entry (and the snapshot keyed by its hash) is pruned once the new
    # version has loaded
    stale = [p.split("/")[1] for p in old if "/pyrite-" in p][0]
    page.wait_for_function("(stale) => caches.open('pyrite').then((c) => c.keys())"
                           ".then((ks) => !ks.some((k) => k.url.includes(stale)))", arg=stale)
    # and so is the old snapshot in IndexedDB, the new version's own stored instead
    assert page.evaluate("pyrite.nextVisitReady()")["stored"] is True
    deadline = time.monotonic() + 30
    kept: list[str] = page.evaluate(SNAPSHOT_STORE, ["keys"])
    while any(stale in k for k in kept):
        assert time.monotonic() < deadline, kept
        page.wait_for_timeout(50)
        kept = page.evaluate(SNAPSHOT_STORE, ["keys"])
    assert len(kept) == 2, kept
    assert export(root / SUB, "mnist").returncode == 0  # back to the sources as they are


def test_bad_embeds_say_what_is_wrong(site: tuple[Path, str],
                                      new_page: Callable[..., Any]) -> None:
    root, url = site
    pages = {
        "syntax.html": '<pyrite-script id="s">print("a"\n</pyrite-script>',
        "model.html": '<pyrite-script id="s" models="nope">print(1)</pyrite-script>',
        "nogpu.html": '<pyrite-script id="s" device="webgpu">print(1)</pyrite-script>',
    }
    for name, body in pages.items():
        (root / name).write_text(f'<!doctype html><script type="module" src="/{SUB}/pyrite.js">'
                                 f'</script>{body}')
    # a bundle folder without its manifest (a partial copy, a wrong path)
    partial = root / "partial"
    partial.mkdir(exist_ok=True)
    for f in (root / SUB).glob("*.js"):  # every script, none of the rest
        shutil.copy(f, partial / f.name)
    (root / "partial.html").write_text('<!doctype html><script type="module" '
                                       'src="/partial/pyrite.js"></script>'
                                       '<pyrite-script id="s">print(1)</pyrite-script>')
    expected = {"syntax.html": "SyntaxError", "model.html": "unknown model \"nope\"",
                "nogpu.html": "WebGPU", "partial.html": "manifest"}
    for name, words in expected.items():
        page = new_page(webgpu=name != "nogpu.html")  # a browser without WebGPU
        page.goto(f"{url}/{name}")
        page.wait_for_selector("#s[data-state=error]")
        shown = page.evaluate("document.getElementById('s').shadowRoot.querySelector('.error')"
                              ".textContent")
        assert words in shown, (name, shown)
        assert any(words in e for e in page.errors), (name, page.errors)
        page.close()


@pytest.fixture(scope="module")
def cross_origin(site: tuple[Path, str]) -> Iterator[tuple[str, str, str]]:
    """pyrite serve allowing one host origin, the allowed host and a host it does not allow."""
    root, _ = site
    allowed, refused = StaticServer(root), StaticServer(root)
    server = harness.Server("--allow-origin", allowed.url)
    yield server.url, allowed.url, refused.url
    server.stop()
    allowed.stop()
    refused.stop()


def test_cross_origin_embed_from_pyrite_serve(site: tuple[Path, str],
                                              cross_origin: tuple[str, str, str],
                                              new_page: Callable[..., Any]) -> None:
    root, _ = site
    serve_url, allowed, refused = cross_origin
    (root / "cross.html").write_text(HOST.format(bundle=f"{serve_url}/web/", before=""))
    page = new_page()
    page.goto(f"{allowed}/cross.html")
    assert page.evaluate("window.computed") == [[1.5], [6.0]]
    page.wait_for_selector("#script[data-state=done]")
    assert "device: webgpu" in page.evaluate(
        "document.getElementById('script').shadowRoot.textContent")
    page = new_page()
    page.goto(f"{refused}/cross.html")
    page.wait_for_timeout(2000)
    assert page.evaluate("typeof window.pyrite") == "undefined"  # the import was refused
    assert any("CORS" in e or "blocked" in e for e in page.errors), page.errors


def test_preload_lines_and_brotli_copies_from_pyrite_serve(
        site: tuple[Path, str], cross_origin: tuple[str, str, str],
        new_page: Callable[..., Any]) -> None:
    """The `<link rel="modulepreload">` lines export-web prints, in a page of another origin:
    each script is fetched once (the preload is used, not fetched twice), and pyrite serve
    sends the bundle's .br copies to a browser that accepts brotli."""
    import importlib.util

    from pyrite.wasm import example

    root, _ = site
    serve_url, allowed, _ = cross_origin
    links = example.preload(f"{serve_url}/web/pyrite.js", root / SUB)
    assert links.count("modulepreload") == 3
    (root / "preload.html").write_text(HOST.format(bundle=f"{serve_url}/web/", before="")
                                       .replace("<title>", links + "\n<title>"))
    page = new_page()
    warnings: list[str] = []
    page.on("console", lambda m: warnings.append(m.text) if m.type == "warning" else None)
    encodings: dict[str, str | None] = {}
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url))
    page.on("response", lambda r: encodings.__setitem__(
        r.url.rsplit("/", 1)[-1], r.headers.get("content-encoding")))
    page.goto(f"{allowed}/preload.html")
    assert page.evaluate("window.computed") == [[1.5], [6.0]]
    page.wait_for_selector("#script[data-state=done]")
    page.wait_for_timeout(3500)  # Chromium warns of a preload left unused after 3 s
    for name in example.page_modules(root / SUB):
        assert [u for u in fetched if u == f"{serve_url}/web/{name}"] == \
            [f"{serve_url}/web/{name}"], name
    assert not [w for w in warnings if "preload" in w], warnings
    best = "br" if importlib.util.find_spec("brotli") is not None else "gzip"
    assert encodings["pyodide.asm.wasm"] == best and encodings["pyrite.js"] == best
    assert page.errors == []


def test_a_content_security_policy_without_wasm_is_reported(
        site: tuple[Path, str], cross_origin: tuple[str, str, str],
        new_page: Callable[..., Any]) -> None:
    root, _ = site
    serve_url, allowed, _ = cross_origin
    policy = (f"script-src 'self' {serve_url}; worker-src blob: {serve_url}; "
              f"connect-src {serve_url}")  # no 'wasm-unsafe-eval'
    (root / "csp.html").write_text(
        f'<!doctype html><meta http-equiv="Content-Security-Policy" content="{policy}">'
        f'<script type="module" src="{serve_url}/web/pyrite.js"></script>'
        f'<pyrite-script id="s">print(1)</pyrite-script>')
    page = new_page()
    page.goto(f"{allowed}/csp.html")
    page.wait_for_selector("#s[data-state=error]")
    shown = page.evaluate("document.getElementById('s').shadowRoot.textContent")
    assert "wasm-unsafe-eval" in shown


def test_a_full_storage_quota_falls_back_to_the_network(site: tuple[Path, str],
                                                         new_page: Callable[..., Any]) -> None:
    _, url = site
    page = new_page()
    cdp = page.context.new_cdp_session(page)
    cdp.send("Storage.overrideQuotaForOrigin", {"origin": url, "quotaSize": 4096})  # bytes
    page.goto(f"{url}/")
    assert page.evaluate("window.computed") == [[1.5], [6.0]]  # no cache, still working
    page.wait_for_selector("#script[data-state=done]")
    kept = page.evaluate("caches.open('pyrite').then((c) => c.keys()).then((ks) => ks.length)")
    assert kept <= 2, kept  # the large files did not fit (a first visit keeps 10)
