"""The Web Worker as one file: worker.js and the modules it imports, joined at export.

A module worker fetches `worker.js`, parses it, then fetches the modules it imports, then
theirs: three rounds of requests before its first line runs, each a revalidation on a repeat
visit from a plain static host. The bundle (`pyrite export-web`, and `pyrite serve`'s build)
ships `worker.js` as this one file instead; the sources stay separate modules, and the
bundle keeps them beside it (the service worker lists them, and tools may import one).

Only what pyrite's worker modules use is handled, and anything else is refused at export time
with the module and line named: `import { a, b as c } from "./x.js";` of a module of this
folder, and `export` before a `function`, `async function`, `const`, `let` or `class`. Each
imported module becomes a function run once, in the order ES modules evaluate (a module after
the ones it imports, each once), that returns its exports; an import becomes a `const` taking
the names from that object, so the modules' own top-level names never meet. Dynamic
`import(...)` (Pyodide's files) is left as it is.

    >>> src = {"a.js": 'export const A = 1;\\n', "w.js": 'import { A as B } from "./a.js";\\nB;\\n'}
    >>> print(join("w.js", src.__getitem__))  # doctest: +NORMALIZE_WHITESPACE
    // pyrite's Web Worker as one file, joined at export from w.js, a.js (wasm/worker_bundle.py):
    // edit those, not this.
    <BLANKLINE>
    // a.js
    const pyrite$a = (() => {
    const A = 1;
    return { A };
    })();
    <BLANKLINE>
    // w.js
    const { A: B } = pyrite$a;
    B;
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

IMPORT = re.compile(r'^import\s*\{([^}]*)\}\s*from\s*"\./([\w.-]+\.js)";[ \t]*$', re.M)
EXPORTED = re.compile(
    r"^export\s+((?:async\s+)?function\*?\s*|const\s+|let\s+|class\s+)([A-Za-z_$][\w$]*)", re.M)
# what is left of an import or export statement once the two above are rewritten
LEFT = re.compile(r"^[ \t]*(import\b(?!\s*\()|export\b)", re.M)
SPEC = re.compile(r"^([A-Za-z_$][\w$]*)(?:\s+as\s+([A-Za-z_$][\w$]*))?$")


class WorkerBundleError(ValueError):
    """A worker module uses a form of import or export this joiner does not handle."""


def _binding(module: str) -> str:
    return "pyrite$" + re.sub(r"\W", "_", module.removesuffix(".js"))


def _imports(name: str, text: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """(module, [(exported name, local name)]) for each import of `text`, in order."""
    found = []
    for match in IMPORT.finditer(text):
        pairs = []
        for spec in (s.strip() for s in match.group(1).split(",")):
            if not spec:
                continue
            parsed = SPEC.match(spec)
            if parsed is None:
                raise WorkerBundleError(f"{name}: cannot read the import {spec!r} of "
                                        f"{match.group(2)} (write `name` or `name as other`)")
            pairs.append((parsed.group(1), parsed.group(2) or parsed.group(1)))
        found.append((match.group(2), pairs))
    return found


def _rewrite(name: str, text: str) -> tuple[str, list[str]]:
    """`text` with its imports as consts and `export` dropped; the names it exported."""
    def as_const(match: re.Match[str]) -> str:
        (module, pairs), = _imports(name, match.group(0))
        names = ", ".join(a if a == b else f"{a}: {b}" for a, b in pairs)
        return f"const {{ {names} }} = {_binding(module)};"

    body = IMPORT.sub(as_const, text)
    exported = [m.group(2) for m in EXPORTED.finditer(body)]
    body = EXPORTED.sub(lambda m: m.group(1) + m.group(2), body)
    left = LEFT.search(body)
    if left is not None:
        line = body.count("\n", 0, left.start()) + 1
        raise WorkerBundleError(f"{name}, line {line}: an import or export the worker bundle "
                                "does not handle (wasm/worker_bundle.py takes `import { ... } "
                                "from \"./x.js\";` and `export` before a declaration)")
    return body, exported


def join(entry: str, read: Callable[[str], str]) -> str:
    """The worker `entry` (a file name) and every module it imports, as one script; `read(name)`
    gives a module's source."""
    order: list[str] = []
    texts: dict[str, str] = {}

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            raise WorkerBundleError(f"the worker's modules import each other in a circle: "
                                    f"{' -> '.join((*path, name))}")
        if name in order:
            return
        texts[name] = read(name)
        for module, _ in _imports(name, texts[name]):
            visit(module, (*path, name))
        order.append(name)

    visit(entry, ())
    parts = [f"// pyrite's Web Worker as one file, joined at export from {entry}, "
             f"{', '.join(n for n in order if n != entry)} (wasm/worker_bundle.py):\n"
             "// edit those, not this.\n"]
    for name in order:
        body, exported = _rewrite(name, texts[name])
        if name == entry:
            parts.append(f"// {name}\n{body}")
        else:
            parts.append(f"// {name}\nconst {_binding(name)} = (() => {{\n{body.rstrip()}\n"
                         f"return {{ {', '.join(exported)} }};\n}})();\n")
    return "\n".join(parts)


def bundle(folder: Path, entry: str = "worker.js") -> str:
    """join() over the modules in `folder` (pyrite's wasm package): the bundle's worker.js."""
    def read(name: str) -> str:
        path = folder / name
        if not path.is_file():
            raise WorkerBundleError(f"{entry} imports ./{name}, which is not in {folder}")
        return path.read_text(encoding="utf-8")

    return join(entry, read)


__all__ = ["WorkerBundleError", "bundle", "join"]
