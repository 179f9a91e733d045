"""The HTML side: the home page listing the demos, and each demo's page folder.

`/{demo}` is the demo's `page/index.html` (`/mnist`: demos/mnist/page/, `/classify`:
demos/image_classification/page/); the page's other files are at `/demos/{demo}/{path}` (so
`/demos/{demo}/` serves the index too, with its relative links working), and what the pages
share (demos/page/: demo.js, demo.css) at `/demos/shared/{path}`. The pages themselves live
with their demos; this module only routes to them.
"""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

import pyrite

from .folders import PAGE_INDEX
from .static import StaticFolder

#: the URL folder of what the demo pages share: /demos/shared/demo.js
SHARED = "shared"

_HOME = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pyrite demos</title>
<link rel="icon" href="data:,">
<style>
  body {{ font: 16px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 3rem auto;
         padding: 0 1rem; color: #222; }}
  h1 {{ margin-bottom: 0; }}
  .tagline {{ color: #666; margin-top: 0; }}
  li {{ margin: .5rem 0; }}
  a {{ color: #0b5fff; }}
  footer {{ margin-top: 3rem; color: #666; font-size: .875rem; }}
  button {{ font: inherit; padding: .3rem .9rem; border-radius: 1rem; border: 1px solid #999;
           background: #fff; cursor: pointer; }}
  #gpu dl {{ display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }}
  #gpu dt {{ color: #666; }}
  #gpu dd {{ margin: 0; overflow-wrap: anywhere; }}
</style>
</head>
<body>
<h1>pyrite</h1>
<p class="tagline">Deep learning in Python, on the CPU, the GPU and in this browser.</p>
<h2>Demos</h2>
<ul>
{items}
</ul>
<h2>Other pages</h2>
<ul>
<li><a href="/web/">/web/</a>: the web bundle, as any site can host it (<code>pyrite
export-web</code>), with its example page: pyrite in a page of your own</li>
<li><a href="/api/models">/api/models</a>: the JSON API, which runs the same models on this
server (for clients without WebGPU)</li>
</ul>
<h2>This browser</h2>
<section id="gpu" aria-live="polite">
<p>What pyrite gets from this browser's WebGPU (the page's <code>pyrite info backends</code>):
starts Python in a worker and asks for the GPU.</p>
<button id="check" type="button">Check this browser</button>
<p id="gpu-status"></p>
<dl id="gpu-info" hidden></dl>
</section>
<script type="module">
const status = document.getElementById("gpu-status");
const list = document.getElementById("gpu-info");
// SwiftShader (Chromium's), llvmpipe/lavapipe (Mesa), WARP (Windows): GPUs emulated on the CPU
const SOFTWARE = /swiftshader|llvmpipe|lavapipe|warp|software|microsoft basic render|\\(cpu\\b/i;
const isSoftware = (a) => Boolean(a.isFallbackAdapter) || SOFTWARE.test(JSON.stringify(a));
const row = (name, value) => {{
  const dt = document.createElement("dt"); dt.textContent = name;
  const dd = document.createElement("dd"); dd.textContent = value;
  list.append(dt, dd);
}};
document.getElementById("check").addEventListener("click", async (event) => {{
  event.target.disabled = true;
  status.textContent = "Starting Python and asking for the GPU…";
  try {{
    const pyrite = await import("/pyrite.js");
    const got = await pyrite.load({{ device: "webgpu" }});
    const a = got.adapter;
    const software = isSoftware(a);
    row("device", got.device);
    row("adapter", a["in use"]);
    row("kind", software ? "software: the GPU is emulated on the CPU (slow)"
      : "hardware: a real GPU");
    row("features", a.features.join(", ") || "none");
    for (const name of ["maxBufferSize", "maxStorageBufferBindingSize",
                        "maxComputeWorkgroupStorageSize", "maxComputeInvocationsPerWorkgroup",
                        "maxComputeWorkgroupsPerDimension"]) row(name, a.limits[name]);
    row("Python", `${{got.python}} (Pyodide ${{got.pyodide}}), pyrite ${{got.pyrite}}`);
    row("loaded in", `${{Math.round(got.timings.totalMs)}} ms`);
    list.hidden = false;
    status.textContent = software
      ? "WebGPU works here, but on a software adapter: pyrite's models run, slowly, on the " +
        "CPU. A browser with GPU access runs them much faster."
      : "WebGPU works here on a real GPU: pyrite's models run on it.";
    status.dataset.state = "ready";
    status.dataset.adapter = software ? "software" : "hardware";
  }} catch (err) {{
    status.textContent = `No WebGPU for pyrite here: ${{err.message}}`;
    status.dataset.state = "error";
  }}
}});
</script>
<footer>pyrite {version} &middot; <a href="/api/models">API: models</a> &middot;
<a href="/api/config">config</a> &middot; <a href="/healthz">health</a></footer>
</body>
</html>
"""


def home_html(demos: Mapping[str, str]) -> str:
    """The home page for demos given as `{name: description}`.

    >>> '<a href="/mnist">mnist</a>' in home_html({"mnist": "digits"})
    True
    """
    items = "\n".join(f'<li><a href="/{html.escape(name)}">{html.escape(name)}</a>: '
                      f"{html.escape(text)}</li>" for name, text in sorted(demos.items()))
    return _HOME.format(items=items or "<li>no demos installed</li>",
                        version=html.escape(pyrite.__version__))


class Pages:
    """The home page and the demo pages, from `{name: page folder}` and `{name: description}`
    (names as in the URL), with the folder the pages share (None: not served)."""

    def __init__(self, folders: Mapping[str, Path], descriptions: Mapping[str, str],
                 shared: Path | None = None) -> None:
        self.folders = {name: StaticFolder(path, index=PAGE_INDEX, label=f"the {name} demo page")
                        for name, path in folders.items()}
        self.shared = None if shared is None else StaticFolder(
            shared, label="the demo pages' shared files")
        self._home = home_html({name: descriptions.get(name, "") for name in folders})

    def routes(self) -> list[BaseRoute]:
        """`/`, and `/{demo}`, `/{demo}/` (redirect) for each demo, `/demos/shared/{path}`,
        `/demos/{demo}/{path}`."""
        routes: list[BaseRoute] = [Route("/", self.home, methods=["GET"])]
        for name in self.folders:
            routes.append(Route(f"/{name}", self._page(name), methods=["GET"]))
            routes.append(Route(f"/{name}/", self.redirect, methods=["GET"]))
        if self.shared is not None:
            routes.append(Route(f"/demos/{SHARED}/{{path:path}}", self.shared_file,
                                methods=["GET"]))
        routes.append(Route("/demos/{demo}/{path:path}", self.demo_file, methods=["GET"]))
        return routes

    async def shared_file(self, request: Request) -> Response:
        """A file the demo pages share (demos/page/)."""
        assert self.shared is not None
        return self.shared.response(request, request.path_params["path"])

    async def home(self, request: Request) -> Response:
        """The home page: each demo with its description and link."""
        return HTMLResponse(self._home, headers={"Cache-Control": "no-cache"})

    def _page(self, name: str) -> Callable[[Request], Awaitable[Response]]:
        folder = self.folders[name]

        async def page(request: Request) -> Response:
            if folder.find(PAGE_INDEX) is None:
                raise HTTPException(404, f"the {name} demo has no page: "
                                    f"{folder.root / PAGE_INDEX} is missing (or not a plain "
                                    f"file inside its folder)")
            return folder.response(request, PAGE_INDEX)

        page.__doc__ = f"The {name} demo's {PAGE_INDEX}."
        return page

    async def redirect(self, request: Request) -> Response:
        """`/{demo}/` -> `/{demo}`, the page's one address."""
        return RedirectResponse(request.url.path.rstrip("/"), status_code=308)

    async def demo_file(self, request: Request) -> Response:
        """A file of a demo's page folder (a 404 for an unknown demo)."""
        folder = self.folders.get(request.path_params["demo"])
        if folder is None:
            raise HTTPException(404, f"no demo called {request.path_params['demo']!r}; the "
                                f"demos are: {', '.join(sorted(self.folders))}")
        return folder.response(request, request.path_params["path"])


__all__ = ["SHARED", "Pages", "home_html"]
