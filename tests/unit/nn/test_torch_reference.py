"""Cross-checks against PyTorch, where it is installed (skipped otherwise): the same inputs
through pyrite's functional ops and torch.nn.functional, forward and input gradient."""

from __future__ import annotations

import numpy as np
import pytest

import pyrite
from pyrite.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
AD = "autodiff<numpy>"

CASES = [
    ("conv2d", dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
     (2, 4, 7, 8), (6, 2, 3, 3)),
    ("conv_transpose2d", dict(stride=2, padding=1, output_padding=1, groups=2, dilation=1),
     (2, 4, 3, 5), (4, 3, 3, 2)),
    ("conv1d", dict(stride=2, padding=2, dilation=3), (2, 3, 11), (5, 3, 2)),
    ("conv_transpose1d", dict(stride=3, padding=1, output_padding=2), (1, 2, 4), (2, 3, 4)),
]


@pytest.mark.parametrize("name, kw, xs, ws", CASES, ids=[c[0] for c in CASES])
def test_convolutions(name, kw, xs, ws) -> None:
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=xs), rng.normal(size=ws)
    bias_size = ws[1] * kw.get("groups", 1) if "transpose" in name else ws[0]
    b = rng.normal(size=bias_size)
    tx = torch.tensor(x, requires_grad=True)
    want = getattr(TF, name)(tx, torch.tensor(w), torch.tensor(b), **kw)
    px = pyrite.tensor(x, device=AD).require_grad()
    got = getattr(F, name)(px, pyrite.tensor(w, device=AD), pyrite.tensor(b, device=AD), **kw)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), atol=1e-10)
    r = rng.normal(size=want.shape)
    (want * torch.tensor(r)).sum().backward()
    grads = (got * pyrite.tensor(r, device=AD)).sum().backward()
    np.testing.assert_allclose(px.grad(grads).numpy(), tx.grad.numpy(), atol=1e-10)


@pytest.mark.parametrize("mode, align", [("nearest", None), ("bilinear", True),
                                         ("bilinear", False)])
def test_interpolate(mode, align) -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 3, 5, 4))
    want = TF.interpolate(torch.tensor(x), size=(8, 3), mode=mode, align_corners=align)
    got = F.interpolate2d(pyrite.tensor(x), (8, 3), mode=mode,
                          align_corners=True if align is None else align)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)


def test_adaptive_avg_pool() -> None:
    x = np.random.default_rng(2).normal(size=(2, 3, 11, 7))
    want = TF.adaptive_avg_pool2d(torch.tensor(x), (4, 3))
    np.testing.assert_allclose(F.adaptive_avg_pool2d(pyrite.tensor(x), (4, 3)).numpy(),
                               want.numpy(), atol=1e-12)
