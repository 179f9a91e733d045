"""GradientsParams splits one backward pass between optimizers; the accumulator sums steps."""

from __future__ import annotations

import numpy as np

import pyrite
from pyrite.module import Module, Param
from pyrite.optim import AdamConfig, GradientsAccumulator, GradientsParams, SgdConfig

DEVICE = "autodiff<numpy>"


class Layer(Module):
    def __init__(self, w: list[list[float]], b: list[float]) -> None:
        self.weight = Param(pyrite.tensor(w, device=DEVICE))
        self.bias = Param(pyrite.tensor(b, device=DEVICE))

    def forward(self, x: pyrite.Tensor) -> pyrite.Tensor:
        return x @ self.weight.val + self.bias.val


class Net(Module):
    def __init__(self) -> None:
        self.first = Layer([[1.0, 2.0], [3.0, 4.0]], [0.5, -0.5])
        self.second = Layer([[1.0], [-1.0]], [0.0])

    def forward(self, x: pyrite.Tensor) -> pyrite.Tensor:
        return self.second(self.first(x))


def loss_of(net: Net) -> pyrite.Tensor:
    x = pyrite.tensor([[1.0, 2.0], [0.5, -1.0]], device=DEVICE)
    return (net(x) ** 2).sum()


def test_from_grads_takes_every_param() -> None:
    net = Net()
    grads = loss_of(net).backward()
    gp = GradientsParams.from_grads(grads, net)
    assert sorted(gp.ids()) == sorted(p.id for p in net.params())
    assert len(grads) == 0  # moved out
    w = gp.get(net.first.weight.id)
    assert w is not None and w.device.name == "numpy" and w.shape == (2, 2)


def test_from_module_and_from_params_split_the_gradients() -> None:
    net = Net()
    grads = loss_of(net).backward()
    reference = {p.id: p.val.grad(grads).numpy() for p in net.params()}
    first = GradientsParams.from_module(grads, net.first)
    assert sorted(first.ids()) == sorted([net.first.weight.id, net.first.bias.id])
    bias = GradientsParams.from_params(grads, net, [net.second.bias.id])
    assert bias.ids() == [net.second.bias.id]
    rest = GradientsParams.from_grads(grads, net)
    assert rest.ids() == [net.second.weight.id]
    for part in (first, bias, rest):
        for pid, g in part.items():
            np.testing.assert_array_equal(g.numpy(), reference[pid])


def test_different_rates_for_different_parts() -> None:
    net = Net()
    grads = loss_of(net).backward()
    g_first = GradientsParams.from_module(grads, net.first)
    g_rest = GradientsParams.from_grads(grads, net)
    want_first = net.first.weight.val.numpy() - 0.1 * g_first.get(net.first.weight.id).numpy()
    want_second = net.second.weight.val.numpy() - 0.01 * g_rest.get(net.second.weight.id).numpy()
    sgd = SgdConfig().init()
    net2 = sgd.step(0.1, net, g_first)
    net2 = sgd.step(0.01, net2, g_rest)
    np.testing.assert_allclose(net2.first.weight.val.numpy(), want_first, rtol=1e-6)
    np.testing.assert_allclose(net2.second.weight.val.numpy(), want_second, rtol=1e-6)
    assert g_first.is_empty() and g_rest.is_empty()  # consumed by the steps
    # ids survive the step, and the stepped model trains again
    assert [p.id for p in net2.params()] == [p.id for p in net.params()]
    assert len(GradientsParams.from_grads(loss_of(net2).backward(), net2)) == 4


def test_raw_gradients_are_accepted_and_loss_goes_down() -> None:
    net = Net()
    optim = AdamConfig().init()
    first = float(loss_of(net))
    for _ in range(20):
        net = optim.step(0.05, net, loss_of(net).backward())
    assert float(loss_of(net)) < first * 0.5


def test_accumulator_sums_gradients_of_several_passes() -> None:
    net = Net()
    acc = GradientsAccumulator()
    single = GradientsParams.from_grads(loss_of(net).backward(), net)
    want = {pid: 3 * g.numpy() for pid, g in single.items()}
    for _ in range(3):
        acc.accumulate(net, GradientsParams.from_grads(loss_of(net).backward(), net))
    assert acc.count == 3
    summed = acc.grads()
    assert acc.is_empty() and acc.count == 0
    for pid, g in summed.items():
        np.testing.assert_allclose(g.numpy(), want[pid], rtol=1e-6)
