"""Signatures: named dims bind once, size 1 and batch dims broadcast as in numpy, and each
mistake (in the signature or in a call) names the op, the dim and the shapes."""

from __future__ import annotations

import pytest

from pyrite import extend
from pyrite.errors import ShapeError
from pyrite.extend import Signature

MATMUL = "lhs[..., m, k], rhs[..., k, n], bias[..., m, n] -> [..., m, n]"


def test_signatures_broadcast_like_numpy_and_say_what_is_malformed() -> None:
    sig = Signature.parse(MATMUL, "f")
    bound = sig.bind("f", ((2, 1, 5, 7), (3, 7, 4), (4,)))
    assert bound.output == (2, 3, 5, 4)
    assert bound.inputs == ((2, 3, 5, 7), (2, 3, 7, 4), (2, 3, 5, 4))
    assert bound.dims == {"m": 5, "k": 7, "n": 4, "batch": 6}
    with pytest.raises(ShapeError, match=r"^f: signature 'x\[n\]' has no '->'"):
        Signature.parse("x[n]", "f")
    with pytest.raises(ShapeError, match=r"^f: signature output names \['q'\], which no input"):
        Signature.parse("x[n] -> [q]", "f")
    with pytest.raises(ShapeError, match=r"^f: the composite takes \(a\), the signature names "
                                         r"\(x\)"):
        extend.op("x[n] -> [n]", name="f")(lambda a: a)


def test_call_mistakes_name_the_dim_and_the_shapes() -> None:
    sig = Signature.parse(MATMUL, "f")
    with pytest.raises(ShapeError, match=r"^f: batch dims of rhs \(3,\) do not broadcast with lhs "
                                         r"\(2,\)"):
        sig.bind("f", ((2, 5, 7), (3, 7, 4), (5, 4)))
    one = Signature.parse("x[1, n] -> [n]", "g")
    with pytest.raises(ShapeError, match=r"^g: x has shape \(2, 3\), size 1 expected"):
        one.bind("g", ((2, 3),))
    assert one.bind("g", ((3,),)).output == (3,)  # numpy's leading 1
    with pytest.raises(ShapeError, match=r"^h: signature names a dim 'batch'"):
        Signature.parse("x[batch, n] -> [n]", "h")
