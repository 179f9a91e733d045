"""pyrite.js in a real page: loading, the worker, Python errors, device loss, the page's
`pyrite info`, async readback, and the same numbers as natively."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pyrite.demos import registry

from . import harness

pytestmark = pytest.mark.skipif(harness.unavailable() is not None,
                                reason=str(harness.unavailable()))


@pytest.fixture(scope="module")
def session() -> Iterator[harness.PageSession]:
    page_session = harness.PageSession("webgpu", models=["mnist"])
    yield page_session
    page_session.close()


def run(session: harness.PageSession, code: str) -> Any:
    return session.evaluate("(code) => window.pyriteModule.run(code)", code)


def failure(session: harness.PageSession, script: str, arg: Any = None) -> dict[str, str]:
    """What a rejected call of `script` (JS taking `arg`, returning a promise) carried."""
    return session.evaluate(
        "async ([script, arg]) => { try { await (new Function('p', 'arg', script))"
        "(window.pyriteModule, arg); return null; } catch (e) {"
        " return {name: e.name, message: e.message, type: e.pythonType}; } }", [script, arg])


def test_load_reports_device_adapter_and_timings(session: harness.PageSession) -> None:
    got = session.loaded
    assert got["device"] == "webgpu"
    assert got["models"]["mnist"]["params"] == 531178
    adapter = got["adapter"]
    assert "WebGPU (browser)" in adapter["in use"]
    assert adapter["limits"]["maxBufferSize"] > 0  # the page's `pyrite info backends`
    assert isinstance(adapter["features"], list)
    assert set(got["timings"]) >= {"pyodideMs", "installMs", "deviceMs", "modelsMs", "totalMs"}
    # the page's device is the one the worker started while Python booted, described there
    # (gpu_start.js) as Python would have described it, property by property
    same = run(session, """
import pyrite.wasm.page as page
runtime = page._runtime(page.device())
worker, described = runtime.describe(), runtime._described
runtime._described = None
proxied = runtime.describe()
runtime._described = described
[runtime._precompiled is not None, described is not None, worker == proxied,
 len(worker["limits"])]""")
    assert same == [True, True, True, len(adapter["limits"])], same


def test_predictions_compile_no_pipeline_of_their_own(session: harness.PageSession) -> None:
    # the first prediction takes its pipelines from the bundle's list (compiled by the worker
    # while Pyodide booted, for this adapter's type: SwiftShader's, "CPU"); the second (the
    # compiled step's second capture) and the replays after it compile nothing
    predict = "(px) => window.pyriteModule.predict('mnist', {pixels: px})"
    first = session.evaluate(predict, [0.0] * 784)
    assert first["pipelines"] == 0 and first["precompiled"] > 0, first
    for i, value in enumerate((10.0, 20.0, 30.0)):
        again = session.evaluate(predict, [value] * 784)
        assert again["pipelines"] == again["precompiled"] == 0, again
        if i:  # a replay: as at the end of sessions 5 and 6 (page_predict.py's counts)
            assert (again["dispatches"], again["submits"], again["readbacks"]) == (6, 2, 1), \
                again


def test_sync_and_async_readback(session: harness.PageSession) -> None:
    assert run(session, "import pyrite\npyrite.tensor([[1.0, 2.0], [3.0, 4.5]]).sum()"
                        ".into_scalar()") == 10.5
    # the async API awaits mapAsync instead of blocking (callers without JSPI)
    assert run(session, "import pyrite\nt = pyrite.arange(0, 6).reshape([2, 3]) * 2\n"
                        "(await t.to_data_async()).to_list()") == [[0, 2, 4], [6, 8, 10]]
    assert run(session, "import pyrite\npyrite.device().name") == "webgpu"


def test_python_exception_rejects_with_its_message(session: harness.PageSession) -> None:
    err = failure(session, "return p.run(arg)", "raise ValueError('no such digit: 11')")
    assert err == {"name": "PythonError", "message": "no such digit: 11", "type": "ValueError"}
    err = failure(session, "return p.run(arg)",
                  "import pyrite\npyrite.tensor([[1.0, 2.0]]) @ pyrite.tensor([[1.0, 2.0]])")
    assert err["type"] == "ShapeError" and "inner sizes differ" in err["message"]
    err = failure(session, "return p.predict('mnist', {pixels: [1, 2]})")
    assert err["type"] == "ValueError" and "784" in err["message"]
    err = failure(session, "return p.predict('nope', {})")
    assert err["type"] == "KeyError" and "not loaded" in err["message"]
    # the worker keeps working after each failure
    assert run(session, "1 + 1") == 2


def test_out_of_memory_is_a_device_memory_error(session: harness.PageSession) -> None:
    err = failure(session, "return p.run(arg)",
                  "import pyrite\npyrite.zeros((600_000_000,), device='webgpu')")
    assert err["type"] == "DeviceMemoryError"
    assert "smaller batch" in err["message"]
    assert run(session, "import pyrite\npyrite.ones((3,)).sum().into_scalar()") == 3.0


# Large buffers made inside allocations_checked_together (a model's load from its record):
# their out-of-memory checks wait for the GPU once, at the end; a failed check still raises
# DeviceMemoryError. The failure is simulated: SwiftShader does not run out of memory here.
CHECKED_TOGETHER = """
from pyrite.webgpu import browser
from pyrite.wasm import page
from pyodide.code import run_js

runtime = page._runtime(page.device())
waits = []
real_wait = browser._wait
browser._wait = lambda promise: waits.append(1) or real_wait(promise)
try:
    with runtime.allocations_checked_together():
        buffers = [runtime.create_buffer(1_200_000 + 4 * i) for i in range(3)]
    together = len(waits)
    for i, buffer in enumerate(buffers):  # they work
        runtime.write_buffer(buffer, 4, bytes([i + 1]) * 8)
    sums = [sum(runtime.read_buffer(buffer, 0, 16)) for buffer in buffers]

    class FailingScopes:  # the device, whose out-of-memory scopes report an error
        def __init__(self, device):
            self.device = device
        def popErrorScope(self):
            return run_js("Promise.resolve({message: 'simulated'})")
        def __getattr__(self, name):
            return getattr(self.device, name)

    runtime._device = FailingScopes(runtime._device)
    try:
        with runtime.allocations_checked_together():
            runtime.create_buffer(1_600_000)
        failed = None
    except Exception as exc:
        failed = [type(exc).__name__, str(exc)]
    finally:
        runtime._device = runtime._device.device
finally:
    browser._wait = real_wait
[together, sums, failed]
"""


def test_large_buffers_checked_together_wait_once(session: harness.PageSession) -> None:
    together, sums, failed = run(session, CHECKED_TOGETHER)
    assert together == 1  # three buffers over 1 MiB, one wait
    assert sums == [8, 16, 24]
    assert failed[0] == "DeviceMemoryError" and "simulated" in failed[1], failed
    assert run(session, "import pyrite\npyrite.ones((3,)).sum().into_scalar()") == 3.0


def test_page_prediction_equals_native(session: harness.PageSession) -> None:
    pixels = [float((i * 37) % 256) if 200 < i < 600 else 0.0 for i in range(784)]
    page = session.evaluate("(px) => window.pyriteModule.predict('mnist', {pixels: px})",
                                 pixels)
    model = registry.get("mnist")
    native = model.predict(model.load("numpy", model.record), {"pixels": pixels})
    assert page["label"] == native["label"]
    assert page["probabilities"] == pytest.approx(native["probabilities"], abs=1e-5)
    assert page["backend"] == "webgpu (page)"
    assert page["dispatches"] > 0 and page["readbacks"] == 1


def test_device_loss_is_recovered_and_reported(session: harness.PageSession) -> None:
    run(session, "import pyrite\npyrite.device('webgpu').kernels.runtime.inner._device"
                 ".destroy()")
    pixels = [0.0] * 784
    out = session.evaluate("(px) => window.pyriteModule.predict('mnist', {pixels: px})",
                                pixels)
    assert "device was lost" in out["recovered"]
    again = session.evaluate("(px) => window.pyriteModule.predict('mnist', "
                                  "{pixels: px})", pixels)
    assert "recovered" not in again
    assert again["probabilities"] == pytest.approx(out["probabilities"], abs=1e-6)
    # a tensor made before the loss is gone, with an error that says so
    err = failure(session, "return p.run(arg)",
                  "import pyrite\nt = pyrite.ones((2,))\n"
                  "pyrite.device('webgpu').kernels.runtime.inner._device.destroy()\n"
                  "t.to_list()")
    assert err["type"] == "DeviceLostError"
    assert run(session, "import pyrite\npyrite.device('webgpu').reset()\n"
                        "pyrite.ones((2,)).to_list()") == [1.0, 1.0]


def test_main_thread_stays_responsive_while_python_runs(session: harness.PageSession) -> None:
    ticks = session.evaluate("""async () => {
        let ticks = 0;
        const timer = setInterval(() => ticks++, 10);
        await window.pyriteModule.run(
            "import time\\nend = time.time() + 1.0\\nwhile time.time() < end: pass");
        clearInterval(timer);
        return ticks;
    }""")
    assert ticks >= 20  # a blocked main thread would tick at most once


def test_home_page_reports_this_browsers_gpu(server_url: str,
                                             launch_chromium: Any) -> None:
    page = launch_chromium().new_page()
    page.goto(server_url)
    page.click("#check")
    page.wait_for_selector("#gpu-status[data-state]", timeout=180_000)
    assert page.get_attribute("#gpu-status", "data-state") == "ready"
    text = page.inner_text("#gpu-info")
    assert "WebGPU (browser)" in text and "maxBufferSize" in text
    # SwiftShader is a GPU emulated on the CPU: the page says so
    assert "software: the GPU is emulated on the CPU" in text
    assert page.get_attribute("#gpu-status", "data-adapter") == "software"
    assert "software adapter" in page.inner_text("#gpu-status")
    assert page.locator("a[href='/web/']").count() == 1
    page.close()


def test_a_kernel_that_does_not_compile_is_reported(session: harness.PageSession) -> None:
    err = failure(session, "return p.run(arg)",
                  "import pyrite\nrt = pyrite.device('webgpu').kernels.runtime\n"
                  "rt.pipeline('broken', '@compute @workgroup_size(1) fn main( {}')\n"
                  "pyrite.ones((2,)).to_list()")
    assert err["type"] == "PyriteError"
    assert "kernel broken did not compile" in err["message"]
    assert run(session, "import pyrite\npyrite.ones((2,)).sum().into_scalar()") == 2.0
