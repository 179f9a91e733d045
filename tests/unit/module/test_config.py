"""Config: frozen dataclasses with builders and JSON round trips."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import KW_ONLY
from enum import Enum
from pathlib import Path

import pytest

from pyrite.errors import ConfigError
from pyrite.module import Config


class Mode(Enum):
    FAST = "fast"
    SLOW = "slow"


class Inner(Config):
    width: int
    _: KW_ONLY
    scale: float = 1.0


class Base(Config):
    _: KW_ONLY
    gain: float = 1.0


class Special(Base):
    _: KW_ONLY
    extra: int = 3


class Outer(Config):
    d_model: int
    inner: Inner
    _: KW_ONLY
    dropout: float = 0.1
    kernel: int | tuple[int, int] = 3
    pads: tuple[tuple[int, int], ...] = ((0, 0), (1, 1))
    mode: Mode = Mode.FAST
    base: Base = Special(gain=2.0)
    note: str | None = None


def test_sizes_positional_options_keyword_only() -> None:
    c = Outer(512, Inner(4), dropout=0.2)
    assert c.dropout == 0.2
    with pytest.raises(TypeError):
        Outer(512, Inner(4), 0.2)  # type: ignore[misc]


def test_frozen_and_hashable() -> None:
    c = Inner(4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.width = 5  # type: ignore[misc]
    assert hash(c) == hash(Inner(4))


def test_lists_become_tuples() -> None:
    c = Outer(1, Inner(1), kernel=[3, 5], pads=[[1, 2], [3, 4]])  # type: ignore[arg-type]
    assert c.kernel == (3, 5) and c.pads == ((1, 2), (3, 4))
    hash(c)


def test_with_builders_return_changed_copies() -> None:
    c = Outer(1, Inner(1))
    d = c.with_dropout(0.5).with_inner(Inner(8, scale=2.0))  # type: ignore[attr-defined]
    assert (d.dropout, d.inner.width, c.dropout) == (0.5, 8, 0.1)
    assert c.replace(d_model=7).d_model == 7
    with pytest.raises(ConfigError, match="no field nope"):
        c.replace(nope=1)


def test_json_round_trip_with_nesting_enums_and_subclasses() -> None:
    c = Outer(64, Inner(3, scale=0.5), kernel=(2, 3), mode=Mode.SLOW, note="hi")
    data = json.loads(c.to_json())
    assert data["inner"] == {"width": 3, "scale": 0.5}
    assert data["base"] == {"Special": {"gain": 2.0, "extra": 3}}
    assert data["mode"] == "slow" and data["kernel"] == [2, 3]
    back = Outer.from_json(c.to_json())
    assert back == c and isinstance(back.base, Special)


def test_from_dict_defaults_and_errors() -> None:
    assert Inner.from_dict({"width": 2}) == Inner(2)
    assert Inner.from_dict({"width": 2, "scale": 1}).scale == 1.0
    with pytest.raises(ConfigError, match="missing field 'width'"):
        Inner.from_dict({})
    with pytest.raises(ConfigError, match="unknown field 'depth'"):
        Inner.from_dict({"width": 1, "depth": 2})
    with pytest.raises(ConfigError, match="not valid JSON"):
        Inner.from_json("{")


def test_save_and_load(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    c = Outer(8, Inner(2))
    assert c.save(path) == path
    assert Outer.load(path) == c
    assert not list(tmp_path.glob(".*.tmp"))
    with pytest.raises(ConfigError, match="no such config file"):
        Outer.load(tmp_path / "missing.json")
    path.write_text('{"d_model": 1}')
    with pytest.raises(ConfigError, match=r"config\.json: Outer: missing field 'inner'"):
        Outer.load(path)


def test_unsaveable_values_are_refused() -> None:
    class Holder(Config):
        value: object

    with pytest.raises(ConfigError, match="Holder.value: a frozenset cannot be saved"):
        Holder(frozenset({1})).to_dict()  # type: ignore[arg-type]
