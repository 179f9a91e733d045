"""wasm/worker_bundle.py: the bundle's worker.js is worker.js and the modules it imports as one
script, which runs (under Node, with a stand-in for the worker's global scope) and answers a
message; forms of import and export it does not handle are refused at export with the module
named."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pyrite.wasm import worker_bundle
from pyrite.wasm.worker_bundle import WorkerBundleError, join

WASM = Path(worker_bundle.__file__).parent

# the worker's global scope, as far as its modules touch it at load; then one request
RUN = """
const posted = [];
globalThis.self = globalThis;
self.addEventListener = () => {};
self.postMessage = (msg) => posted.push(msg);
await import(process.argv[1]);
await self.onmessage({ data: { id: 1, type: "nothing" } });
await self.onmessage({ data: { id: 2, type: "run", code: "1" } });
console.log(JSON.stringify(posted));
"""


def test_the_worker_and_every_module_it_imports_are_one_script() -> None:
    text = worker_bundle.bundle(WASM)
    imported = set(re.findall(r'from "\./([\w.-]+\.js)"', (WASM / "worker.js").read_text()))
    assert imported and all(f"// {name}\nconst pyrite$" in text for name in imported)
    assert "wheels.js" in text  # imported by python_setup.js, not by worker.js itself
    assert not re.search(r'^\s*(import\s*\{|export\s)', text, re.M)
    # a module comes after the ones it imports; worker.js last
    assert text.index("// snapshot_store.js\n") < text.index("// restore.js\n")
    assert text.rindex("// worker.js\n") > text.index("// snapshot_background.js\n")


@pytest.mark.skipif(shutil.which("node") is None, reason="no Node.js")
def test_the_bundle_runs_and_answers(tmp_path: Path) -> None:
    script = tmp_path / "worker.mjs"
    script.write_text(worker_bundle.bundle(WASM))
    done = subprocess.run(["node", "--input-type=module", "-e", RUN, script.as_uri()],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    first, second = json.loads(done.stdout)
    assert first["id"] == 1 and not first["ok"]
    assert first["error"]["message"] == "unknown request nothing"
    assert second["error"]["message"].startswith("pyrite is not loaded")


def test_imports_with_other_names_and_each_module_once() -> None:
    sources = {"w.js": 'import { f as g } from "./a.js";\nimport { B } from "./b.js";\ng(B);\n',
               "a.js": 'import { B } from "./b.js";\nexport function f(x) { return x + B; }\n',
               "b.js": "export const B = 2;\nlet open = 1;\n"}
    text = join("w.js", sources.__getitem__)
    assert text.count("const pyrite$b = ") == 1
    assert text.index("const pyrite$b") < text.index("const pyrite$a")
    assert "const { f: g } = pyrite$a;" in text and "return { f };" in text


@pytest.mark.parametrize(("sources", "said"), [
    ({"w.js": 'import { a } from "./a.js";\n', "a.js": 'import { w } from "./w.js";\n'},
     "in a circle: w.js -> a.js -> w.js"),
    ({"w.js": 'import { a } from "./a.js";\n', "a.js": "export default 1;\n"},
     "a.js, line 1: an import or export the worker bundle does not handle"),
    ({"w.js": 'import * as a from "./a.js";\n', "a.js": ""},
     "w.js, line 1: an import or export"),
    ({"w.js": 'import { a, b c } from "./a.js";\n', "a.js": ""},
     "cannot read the import 'b c'"),
])
def test_what_it_does_not_handle_is_refused(sources: dict[str, str], said: str) -> None:
    with pytest.raises(WorkerBundleError, match=re.escape(said)):
        join("w.js", sources.__getitem__)


def test_a_missing_module_is_named(tmp_path: Path) -> None:
    (tmp_path / "worker.js").write_text('import { a } from "./gone.js";\n')
    with pytest.raises(WorkerBundleError, match=r"worker.js imports \./gone.js, which is not in"):
        worker_bundle.bundle(tmp_path)
