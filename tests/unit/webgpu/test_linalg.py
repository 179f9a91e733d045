"""matmul: batched, broadcast batch dims, strided (transposed) operands, int."""

from __future__ import annotations

import numpy as np

RNG = np.random.default_rng(2)


def test_matmul_shapes_not_multiple_of_tile(gpu, up, down):
    a = RNG.normal(size=(17, 33)).astype(np.float32)
    b = RNG.normal(size=(33, 5)).astype(np.float32)
    np.testing.assert_allclose(down(gpu.matmul(up(a), up(b))), a @ b, rtol=1e-4, atol=1e-4)


def test_matmul_broadcast_batch_and_transposed(gpu, up, down):
    a = RNG.normal(size=(2, 1, 4, 6)).astype(np.float32)
    b = RNG.normal(size=(1, 3, 5, 6)).astype(np.float32)  # used as b^T: (1, 3, 6, 5)
    got = down(gpu.matmul(up(a), gpu.permute(up(b), (0, 1, 3, 2))))
    want = a @ b.transpose(0, 1, 3, 2)
    assert got.shape == (2, 3, 4, 5)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_matmul_int_and_empty(gpu, up, down):
    a = RNG.integers(-5, 5, (3, 4)).astype(np.int32)
    b = RNG.integers(-5, 5, (4, 2)).astype(np.int32)
    np.testing.assert_array_equal(down(gpu.matmul(up(a), up(b))), a @ b)
    z = down(gpu.matmul(up(np.zeros((2, 0), np.float32)), up(np.zeros((0, 3), np.float32))))
    np.testing.assert_array_equal(z, np.zeros((2, 3)))


def test_tiled_path_for_large_f32(gpu, up, down):
    from pyrite.webgpu import linalg
    a = RNG.normal(size=(3, 70, 90)).astype(np.float32)  # ragged: the scalar variant
    b = RNG.normal(size=(90, 68)).astype(np.float32)
    assert 70 * 68 * 90 >= linalg.TILED_MIN_WORK
    got = down(gpu.matmul(up(a), gpu.reshape(up(b), (1, 90, 68))))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
    c = RNG.normal(size=(64, 128)).astype(np.float32)  # aligned (vec4) and a transposed operand
    got = down(gpu.matmul(up(c), gpu.permute(up(c), (1, 0))))
    np.testing.assert_allclose(got, c @ c.T, rtol=1e-4, atol=1e-4)
    keys = {key.kernel for key, _ in gpu.kernels._sources}
    assert "matmul_tiled" in keys


def _copies(gpu, run):
    """`run()`'s result and the copy kernels it dispatched (the `copies` counter)."""
    before = gpu.kernels.copies
    out = run()
    return out, gpu.kernels.copies - before


def test_tiled_reads_transposed_sliced_and_batched_operands_in_place(gpu, up, down):
    # every layout (A, B each row-major or transposed), ragged and aligned sizes, offsets and
    # leading dimensions of sliced views, a batch stride and a broadcast batch (B): the tiled
    # kernel reads them all without a copy and agrees with numpy
    def rng(a, b):
        return (a, b, 1)

    for m, k, n in ((70, 90, 68), (64, 96, 128), (33, 129, 65)):
        a = RNG.normal(size=(2, m + 3, k + 5)).astype(np.float32)
        at = RNG.normal(size=(2, k + 5, m + 3)).astype(np.float32)
        b = RNG.normal(size=(1, k + 4, n + 4)).astype(np.float32)
        bt = RNG.normal(size=(1, n + 4, k + 4)).astype(np.float32)
        lhs = {"n": (gpu.slice(up(a), (rng(0, 2), rng(1, m + 1), rng(4, k + 4))),
                     a[:, 1:m + 1, 4:k + 4]),
               "t": (gpu.permute(gpu.slice(up(at), (rng(0, 2), rng(4, k + 4), rng(0, m))),
                                 (0, 2, 1)), at[:, 4:k + 4, :m].transpose(0, 2, 1))}
        rhs = {"n": (gpu.slice(up(b), (rng(0, 1), rng(4, k + 4), rng(0, n))), b[:, 4:k + 4, :n]),
               "t": (gpu.permute(gpu.slice(up(bt), (rng(0, 1), rng(4, n + 4), rng(0, k))),
                                 (0, 2, 1)), bt[:, 4:n + 4, :k].transpose(0, 2, 1))}
        for la, (x, xn) in lhs.items():
            for lb, (y, yn) in rhs.items():
                got, copies = _copies(gpu, lambda x=x, y=y: gpu.matmul(x, y))
                np.testing.assert_allclose(down(got), xn @ yn, rtol=1e-4, atol=1e-4,
                                           err_msg=f"layout {la}{lb}, {m}x{k}x{n}")
                assert copies == 0, f"layout {la}{lb}: {copies} copies"
    layouts = {key.params[8] for key, _ in gpu.kernels._sources if key.kernel == "matmul_tiled"}
    assert {"nn", "nt", "tn", "tt"} <= layouts


def test_tiled_copies_what_it_cannot_read(gpu, up, down):
    # a broadcast row (stride 0 along M) is neither layout: copied once, still right
    row = RNG.normal(size=(1, 96)).astype(np.float32)
    b = RNG.normal(size=(96, 80)).astype(np.float32)
    x = gpu.expand(up(row), (72, 96))
    got, copies = _copies(gpu, lambda: gpu.matmul(x, up(b)))
    np.testing.assert_allclose(down(got), np.broadcast_to(row, (72, 96)) @ b, rtol=1e-4,
                               atol=1e-4)
    assert copies == 1


def test_few_output_tiles_split_k(gpu, up, down, monkeypatch):
    """A product whose output fills few tiles (a classifier's last layer, N = 10) splits K
    into slices and adds their partial sums: the values of the unsplit product, ragged and
    aligned, transposed, batched, and through Fusion with the epilogue run apart."""
    import pyrite
    from pyrite.webgpu import linalg, matmul_narrow
    from pyrite.webgpu.fusion import Fusion

    monkeypatch.setattr(matmul_narrow, "MAX_COLS", 0)  # the narrow kernel would take these
    dispatched: list[tuple[int, int, int]] = []
    launch = gpu.kernels.launch
    monkeypatch.setattr(gpu.kernels, "launch", lambda p, b, g: (dispatched.append(g),
                                                                  launch(p, b, g))[1])
    for m, inner, n in ((256, 512, 10), (64, 1000, 16), (100, 777, 5)):
        assert m * inner * n >= linalg.TILED_MIN_WORK
        assert linalg.splits_k(m, n, inner, 1)
        a = RNG.normal(size=(m, inner)).astype(np.float32)
        b = RNG.normal(size=(inner, n)).astype(np.float32)
        dispatched.clear()
        got = down(gpu.matmul(up(a), up(b)))
        np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-3)
        assert dispatched[0][2] > 1 and len(dispatched) == 2, dispatched  # slices, their sum
        bt = np.ascontiguousarray(b.T)
        got_t = down(gpu.matmul(up(a), gpu.permute(up(bt), (1, 0))))
        np.testing.assert_allclose(got_t, a @ b, rtol=1e-4, atol=1e-3)
    a = RNG.normal(size=(3, 32, 600)).astype(np.float32)
    b = RNG.normal(size=(600, 8)).astype(np.float32)
    np.testing.assert_allclose(down(gpu.matmul(up(a), gpu.reshape(up(b), (1, 600, 8)))), a @ b,
                               rtol=1e-4, atol=1e-3)
    device = Fusion(gpu)
    x = RNG.normal(size=(64, 512)).astype(np.float32)
    w = RNG.normal(size=(512, 10)).astype(np.float32)
    bias = RNG.normal(size=(10,)).astype(np.float32)
    out = (pyrite.tensor(x, device=device) @ pyrite.tensor(w, device=device)
           + pyrite.tensor(bias, device=device)).clamp_min(0.0)
    np.testing.assert_allclose(out.numpy(), np.maximum(x @ w + bias, 0), rtol=1e-4, atol=1e-3)


def test_few_output_columns_and_a_long_k_run_the_narrow_kernel(gpu, up, down, monkeypatch):
    """Where the tiled kernel would split K and the output has at most 16 columns (a
    classifier's last layer), one workgroup a row sums K in one dispatch: the values of the
    product for row-major, transposed and batched operands, and through Fusion with the
    epilogue in the same kernel."""
    import pyrite
    from pyrite.webgpu import linalg
    from pyrite.webgpu.fusion import Fusion

    dispatched: list[tuple[int, int, int]] = []
    launch = gpu.kernels.launch
    monkeypatch.setattr(gpu.kernels, "launch", lambda p, b, g: (dispatched.append(g),
                                                                  launch(p, b, g))[1])
    for m, inner, n in ((256, 512, 10), (64, 1000, 16), (100, 777, 5), (300, 4096, 1)):
        assert linalg.splits_k(m, n, inner, 1)
        a = RNG.normal(size=(m, inner)).astype(np.float32)
        b = RNG.normal(size=(inner, n)).astype(np.float32)
        dispatched.clear()
        np.testing.assert_allclose(down(gpu.matmul(up(a), up(b))), a @ b, rtol=1e-4, atol=1e-3)
        assert dispatched == [(m, 1, 1)], dispatched  # one workgroup a row, one dispatch
        bt, at = np.ascontiguousarray(b.T), np.ascontiguousarray(a.T)
        got = down(gpu.matmul(gpu.permute(up(at), (1, 0)), gpu.permute(up(bt), (1, 0))))
        np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-3)
    a = RNG.normal(size=(3, 64, 600)).astype(np.float32)
    b = RNG.normal(size=(600, 8)).astype(np.float32)
    dispatched.clear()
    got = down(gpu.matmul(up(a), gpu.reshape(up(b), (1, 600, 8))))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-3)
    assert dispatched == [(64, 3, 1)], dispatched
    device = Fusion(gpu)
    x = RNG.normal(size=(64, 512)).astype(np.float32)
    w = RNG.normal(size=(512, 10)).astype(np.float32)
    bias = RNG.normal(size=(10,)).astype(np.float32)
    dispatched.clear()
    out = (pyrite.tensor(x, device=device) @ pyrite.tensor(w, device=device)
           + pyrite.tensor(bias, device=device)).clamp_min(0.0)
    np.testing.assert_allclose(out.numpy(), np.maximum(x @ w + bias, 0), rtol=1e-4, atol=1e-3)
    assert dispatched == [(64, 1, 1)], dispatched  # the bias and the ReLU in the product
    assert any(key.kernel == "matmul_narrow" and len(key.params) > 1  # the epilogue's key
               for key, _ in gpu.kernels._sources)
