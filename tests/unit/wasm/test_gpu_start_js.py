"""wasm/gpu_start.js under Node: which of the bundle's kernels a page compiles ahead, in which
order (`kernelsToCompile`, the one place that decides it), and how it names its adapter."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "wasm" / "gpu_start.js"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="no Node.js")


def _node(expression: str) -> Any:
    code = (f"import({json.dumps(SCRIPT.as_uri())}).then((m) => "
            f"console.log(JSON.stringify({expression})))")
    done = subprocess.run(["node", "--input-type=module", "-e", code], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_each_kernel_of_this_adapter_type_once_in_the_recorded_order() -> None:
    lists = [[{"entry": "main", "source": "cast"},
              {"entry": "main", "source": "tiled", "adapters": ["GPU"]},
              {"entry": "main", "source": "naive", "adapters": ["CPU"]}],
             [{"entry": "main", "source": "cast"},  # a second model's list repeats one
              {"entry": "other", "source": "cast", "adapters": ["CPU", "GPU"]}]]
    chosen = _node(f"m.kernelsToCompile({json.dumps(lists)}, 'CPU')"
                   f".map((k) => k.entry + ':' + k.source)")
    assert chosen == ["main:cast", "main:naive", "other:cast"]
    chosen = _node(f"m.kernelsToCompile({json.dumps(lists)}, 'GPU')"
                   f".map((k) => k.entry + ':' + k.source)")
    assert chosen == ["main:cast", "main:tiled", "other:cast"]


def test_swiftshader_is_the_cpu_adapter() -> None:
    got = _node("[m.adapterType({info: {vendor: 'google', architecture: 'swiftshader'}}), "
                "m.adapterType({info: {vendor: 'nvidia', architecture: 'ampere'}}), "
                "m.adapterType({})]")
    assert got == ["CPU", "GPU", "GPU"]


def test_the_adapter_is_described_from_its_prototype_limits() -> None:
    # WebGPU's limits are getters on the prototype, as they are in a browser; features a set
    got = _node("m.describeAdapter({limits: Object.create({maxBufferSize: 256, "
                "minUniformBufferOffsetAlignment: 64, label: 'x'}), "
                "features: new Set(['timestamp-query', 'shader-f16'])})")
    assert got == {"features": ["shader-f16", "timestamp-query"],
                   "limits": {"maxBufferSize": 256, "minUniformBufferOffsetAlignment": 64}}


def test_the_gpu_started_from_the_kept_manifest_fits_only_the_same_one() -> None:
    kept = {"gpu": {"features": ["shader-f16"], "limits": ["maxBufferSize"]},
            "models": {"mnist": {"kernels": {"sha256": "k1"}}, "other": {"kernels": {}}}}
    same = json.dumps(kept)
    cases = {
        "same": f"m.sameGpu({same}, {same}, ['mnist'])",
        "no models": f"m.sameGpu({same}, {same}, [])",
        "other limits": f"m.sameGpu({same}, {{...{same}, gpu: {{features: ['shader-f16'], "
                        f"limits: []}}}}, ['mnist'])",
        "other kernels": f"m.sameGpu({same}, {{...{same}, models: {{mnist: {{kernels: "
                         f"{{sha256: 'k2'}}}}}}}}, ['mnist'])",
        "a model the kept one lacks": f"m.sameGpu({same}, {same}, ['squeezenet'])",
        "a kept model without kernels": f"m.sameGpu({same}, {same}, ['other'])",
        "nothing kept": f"m.sameGpu(null, {same}, ['mnist'])",
    }
    got = _node("[" + ", ".join(cases.values()) + "]")
    assert dict(zip(cases, got, strict=True)) == {
        "same": True, "no models": True, "other limits": False, "other kernels": False,
        "a model the kept one lacks": False, "a kept model without kernels": False,
        "nothing kept": False}
