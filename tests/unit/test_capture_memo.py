"""A compiled call's flatten of a module it saw before (core/capture/memo.py): the same leaves
and structure as a full walk while nothing changed, and a new walk after any change made in
place; an entry never keeps its module alive."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import numpy as np

import pyrite
from pyrite.capture import memo
from pyrite.capture.tree import flatten
from pyrite.module import Module, Param
from pyrite.nn import Dropout, LinearConfig


class Net(Module):
    def __init__(self) -> None:
        self.first = LinearConfig(4, 3).init("numpy")
        self.drop = Dropout(0.5)
        self.blocks = [LinearConfig(3, 3).init("numpy")]
        self.scale = Param(pyrite.ones((3,), device="numpy"))
        self.extra: list[Any] = []


def _full(net: Net) -> tuple[Any, list[Any]]:
    """What a walk without the memo gives."""
    memo.clear()
    leaves: list[Any] = []
    return flatten(net, leaves).signature(), leaves


def _memo(net: Net) -> tuple[Any, list[Any]]:
    leaves: list[Any] = []
    return flatten(net, leaves).signature(), leaves


def _same(a: tuple[Any, list[Any]], b: tuple[Any, list[Any]]) -> bool:
    return a[0] == b[0] and len(a[1]) == len(b[1]) and all(
        x is y for x, y in zip(a[1], b[1], strict=True))


def _remembered(net: Net) -> tuple[Any, list[Any]]:
    memo.clear()
    _memo(net)
    _memo(net)  # the second flatten keeps an entry
    assert memo.recall(net) is not None
    return _memo(net)


def test_an_unchanged_module_gives_the_walks_leaves_and_signature() -> None:
    net = Net()
    assert _same(_remembered(net), _full(net))


def test_a_setting_changed_in_place_is_walked_again() -> None:
    net = Net()
    before = _remembered(net)
    net.drop.prob = 0.0
    after = _memo(net)
    assert after[0] != before[0]
    assert _same(after, _full(net))


def test_a_param_given_a_new_value_is_a_new_leaf() -> None:
    net = Net()
    _remembered(net)
    net.scale.val = pyrite.zeros((3,), device="numpy")
    after = _memo(net)
    assert any(leaf is net.scale.val for leaf in after[1])
    assert _same(after, _full(net))
    net.scale.require_grad = not net.scale.require_grad
    assert _same(_memo(net), _full(net))


def test_a_swapped_submodule_and_an_appended_layer_are_walked_again() -> None:
    net = Net()
    before = _remembered(net)
    net.first = LinearConfig(4, 3).init("numpy")
    swapped = _memo(net)
    assert not _same(swapped, before)
    assert _same(swapped, _full(net))
    _remembered(net)
    net.blocks.append(LinearConfig(3, 3).init("numpy"))
    grown = _memo(net)
    assert len(grown[1]) == len(swapped[1]) + 2
    assert _same(grown, _full(net))
    _remembered(net)
    net.extra.append(Dropout(0.1))  # an empty list that now holds a module
    assert _same(_memo(net), _full(net))


def test_an_entry_does_not_keep_its_module_alive() -> None:
    net = Net()
    _remembered(net)
    ref = weakref.ref(net)
    key = id(net)
    del net
    gc.collect()
    assert ref() is None
    assert key not in memo._ENTRIES and key not in memo._SEEN


def test_a_module_seen_once_keeps_no_entry() -> None:
    memo.clear()
    net = Net()
    _memo(net)
    assert memo.recall(net) is None and not memo._ENTRIES
    np.testing.assert_array_equal(_memo(net)[1][0].numpy(), net.first.weight.val.numpy())
