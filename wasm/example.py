"""The example page at the web bundle's root (`index.html`) and the snippet `pyrite export-web`
prints: one `<script type="module">` tag for `pyrite.js` (which defines pyrite's custom
elements), a `<pyrite-script>` running a few lines of Python in the page, and the
`<pyrite-mnist>` drawing widget when the bundle has the MNIST model.

`preload(src, folder)` is the optional `<link rel="modulepreload">` lines for a page's
`<head>`: `pyrite.js` and every module it imports, found from the bundle's own scripts, so the
browser fetches them in parallel instead of discovering one import after the other (one round
trip instead of one per level). The worker's files (Pyodide, the wheels, the records) are not
in it: the worker fetches them itself, through its own cache (cache.js), which a page's
preload does not fill.
"""

from __future__ import annotations

import html
import re
from collections.abc import Collection
from pathlib import Path

#: a static `import ... from "./x.js"` (or `import "./x.js"`) of a bundle script
_IMPORT = re.compile(r'^\s*import\s+(?:[^"\';]*?\s+from\s+)?["\'](\./[\w.-]+\.js)["\']',
                     re.MULTILINE)

#: the Python the example runs in the page (`display()` is a builtin `<pyrite-script>` gives)
PYTHON = """import pyrite
x = pyrite.tensor([[1.0, 2.0], [3.0, 4.0]])
display(x @ x)"""

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pyrite in a web page</title>
<link rel="icon" href="data:,">
<script type="module" src="./pyrite.js"></script>
<style>
  body {{ font: 16px/1.5 system-ui, sans-serif; max-width: 44rem; margin: 2rem auto;
         padding: 0 1rem; color: #222; }}
  pre {{ background: #f4f4f4; padding: .75rem; overflow-x: auto; }}
</style>
</head>
<body>
<h1>pyrite in a web page</h1>
<p>The Python below runs in this browser: Pyodide in a Web Worker, tensors on the GPU through
WebGPU. This page is the example that <code>pyrite export-web</code> writes beside the bundle;
copy the snippet into any page.</p>
<pre><code>{snippet}</code></pre>
{body}
</body>
</html>
"""


def snippet(src: str, models: Collection[str]) -> str:
    """The HTML to paste into a page, loading `pyrite.js` from `src`."""
    lines = [f'<script type="module" src="{html.escape(src)}"></script>',
             '<pyrite-script device="webgpu">', PYTHON, "</pyrite-script>"]
    if "mnist" in models:
        lines.append("<pyrite-mnist></pyrite-mnist>")
    return "\n".join(lines)


def page_modules(folder: Path, entry: str = "pyrite.js") -> list[str]:
    """The bundle's scripts (names in `folder`) a page's `import` of `entry` loads: `entry`,
    then what it imports statically, in the order they are found."""
    found = [entry]
    for name in found:
        for rel in _IMPORT.findall((folder / name).read_text()):
            if rel[2:] not in found:
                found.append(rel[2:])
    return found


def preload(src: str, folder: Path) -> str:
    """`<link rel="modulepreload">` lines for pyrite.js at `src` and the modules it imports
    (see the module's text)."""
    base = src.removesuffix("pyrite.js")
    return "\n".join(f'<link rel="modulepreload" href="{html.escape(base + name)}">'
                     for name in page_modules(folder))


def index_html(models: Collection[str]) -> str:
    """The bundle's example `index.html` for a bundle holding `models`."""
    body = snippet("./pyrite.js", models).split("\n", 1)[1]  # the tag is in <head>
    return _PAGE.format(snippet=html.escape(snippet("./pyrite.js", models)), body=body)


__all__ = ["PYTHON", "index_html", "page_modules", "preload", "snippet"]
