"""Kernel choices for a page's software adapter (SwiftShader): `pyrite.webgpu.software`, as the
matmul ladder, the linear layers' kernel and the conv heuristic apply it; other adapters
(lavapipe natively included) keep the GPU choices."""

from __future__ import annotations

from typing import Any

import pyrite
from pyrite.nn import functional
from pyrite.webgpu import WebGpu, conv, conv_gemm, matmul_config, software
from pyrite.webgpu.recorder import RecordingRuntime
from pyrite.webgpu.runtime import AdapterInfo


def _adapter(kind: str, backend: str) -> AdapterInfo:
    return AdapterInfo(0, "test", "", backend, kind)


def test_software_is_a_cpu_adapter_in_a_page() -> None:
    assert software.software(_adapter("CPU", "WebGPU (browser)"))  # SwiftShader
    assert not software.software(_adapter("GPU", "WebGPU (browser)"))
    assert not software.software(_adapter("CPU", "Vulkan"))  # lavapipe keeps the GPU choices
    assert software.software(RecordingRuntime(adapter_type="CPU").adapter)
    assert not software.software(RecordingRuntime(adapter_type="GPU").adapter)


def test_software_ladder_is_one_quick_to_compile_tile_and_never_splits() -> None:
    # SqueezeNet's layers in a page (32 KB of workgroup memory, as SwiftShader offers): the GPU
    # ladder wants 256 workgroups and takes the 32x32 tile for each; software takes the 64x64
    # tile of 8x8 register blocks on 64 invocations for every one (one pipeline to compile)
    (tile,) = matmul_config.SOFTWARE_LADDER
    assert matmul_config.CONFIGS[tile].threads == 64

    def pick(m: int, n: int, k: int, software: bool = True) -> str:
        return matmul_config.choose_config(m, n, k, 1, 32768, software=software).name

    for m, n, k in ((256, 196, 576), (1000, 196, 512), (64, 3136, 144), (48, 196, 256),
                    (32, 784, 128), (16, 3136, 64)):
        assert pick(m, n, k, software=False) == matmul_config.SMALL
        assert pick(m, n, k) == tile, (m, n, k)
    for m, n, k in ((1024, 1024, 1024), (512, 10, 4096), (64, 64, 8192), (1, 512, 1024)):
        got = matmul_config.choose_config(m, n, k, 1, 32768, software=True)
        assert got.name == tile
        assert matmul_config.choose_split(m, n, k, 1, 32768, software=True) == (got, 1)
    assert matmul_config.choose_split(1024, 1024, 1024)[1] > 1  # the GPU ladder does split


def test_conv_heuristic_on_software_takes_the_gemm_tile_for_short_reductions_too() -> None:
    # SqueezeNet's conv1: 64 channels, 3 x 3 x 3 = 27 terms; fire2's expand 1x1: 16 terms
    def pick(family: str, m: int, n: int, kdim: int, soft: bool, taps: int = 9) -> str:
        return conv._heuristic(family, m, n, kdim, 1, taps, 32768, soft)

    gemm = "gemm/" + matmul_config.SOFTWARE_LADDER[0]
    assert pick("conv2d_kernel", 64, 12769, 27, False).startswith("gemm/")
    assert pick("conv2d_kernel", 64, 12769, 27, True) == gemm
    assert pick("conv2d_kernel", 64, 3136, 16, True, taps=1) == gemm
    assert pick("conv2d_kernel", 64, 3136, 144, True) == gemm
    # the rest is the GPU's rule: few output channels run direct (MNIST's first conv)
    assert pick("conv2d_kernel", 8, 784, 9, True) == pick("conv2d_kernel", 8, 784, 9, False)
    # the gradients' rules are the GPU ones (no page trains on these measurements), but a weight
    # gradient the GEMM took runs on the tiled kernel's 64x64 tile (conv_wgrad.SOFTWARE_TILE)
    assert pick("conv2d_weight_grad_kernel", 256, 256, 9, True) == "wgrad/64x64"


def _kernels_of(kind: str, run: Any) -> list[str]:
    """The kernel families `run(device)` asks for on a recorder standing for `kind`."""
    runtime = RecordingRuntime(adapter_type=kind)
    names: list[str] = []
    make = runtime.pipeline

    def pipeline(key: Any, source: str, entry_point: str = "main", checks: int = 3) -> Any:
        names.append(f"{key.kernel}/{key.op}")
        return make(key, source, entry_point, checks)

    runtime.pipeline = pipeline  # type: ignore[method-assign]
    run(WebGpu(runtime=runtime, seed=0))
    return names


def test_a_one_row_product_is_a_gemv_on_software() -> None:
    # a linear layer's 1 x 2048 @ (128 x 2048)^T: a GPU splits K and adds the slices; software
    # runs the GEMV (gemv.py: MNIST's 1 x 1024 @ 1024 x 512 in the page compiled in 30-60 ms
    # and ran in 2-5 ms, where the 32x32 tile took 1.5-1.9 s and 78-82 ms)
    def product(device: Any) -> None:
        a = pyrite.zeros((1, 2048), device=device)
        b = pyrite.zeros((128, 2048), device=device)
        (a @ b.transpose()).to_list()

    gpu = _kernels_of("GPU", product)
    cpu = _kernels_of("CPU", product)
    assert any(n.startswith("matmul_split_sum") for n in gpu), gpu
    assert [n for n in cpu if n.startswith("matmul")] == ["matmul_gemv/"]


def test_conv_layers_choose_by_adapter() -> None:
    def layers(device: Any) -> None:
        x = pyrite.zeros((1, 3, 35, 35), device=device)
        w1 = pyrite.zeros((64, 3, 3, 3), device=device)
        w2 = pyrite.zeros((256, 64, 3, 3), device=device)
        y = functional.conv2d(x, w1, stride=2)
        functional.conv2d(y, w2, padding=1).to_list()

    gpu = _kernels_of("GPU", layers)
    cpu = _kernels_of("CPU", layers)
    tile = conv_gemm.choose_tile((256, 17 * 17, 64 * 3 * 3), 1, conv_gemm.FORWARD)
    assert f"conv2d_gemm/{tile.name}" in gpu
    assert not any(n.startswith("conv2d/") for n in cpu)  # the first layer's 27 terms too
    assert f"conv2d_gemm/{matmul_config.SOFTWARE_LADDER[0]}" in cpu
