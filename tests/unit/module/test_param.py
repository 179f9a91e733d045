"""Param: ids, flags, leaves."""

from __future__ import annotations

import pytest

from pyrite import from_ints, ones
from pyrite.errors import KindError
from pyrite.module import Param


def test_ids_are_unique_and_kept_by_with_val() -> None:
    a, b = Param(ones((2,))), Param(ones((2,)))
    assert a.id != b.id
    assert a.with_val(ones((2,)) * 2.0).id == a.id
    assert Param(ones((1,)), id="abc").id == "abc"


def test_require_grad_makes_a_fresh_leaf_on_autodiff() -> None:
    x = ones((2,), device="autodiff<numpy>").require_grad()
    computed = x * 2.0
    p = Param(computed)
    assert p.val.is_require_grad()
    grads = (p.val * 3.0).sum().backward()
    assert p.grad(grads).to_list() == [3.0, 3.0]
    assert x.grad(grads) is None  # the param cut the graph


def test_frozen_params_are_untracked() -> None:
    p = Param(ones((2,), device="autodiff<numpy>"), require_grad=False)
    assert not p.val.is_require_grad()
    assert p.set_require_grad(True).val.is_require_grad()


def test_int_params_must_be_frozen() -> None:
    with pytest.raises(KindError, match="require_grad=False"):
        Param(from_ints([1, 2]))
    assert Param(from_ints([1, 2]), require_grad=False).numel() == 2


def test_repr() -> None:
    p = Param(ones((2, 3)), id="x", require_grad=False)
    assert repr(p) == "Param(id=x, shape=[2, 3], dtype=f32, require_grad=False)"
