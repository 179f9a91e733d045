"""Config: frozen dataclasses of hyper-parameters that save to JSON and build modules.

Subclassing `Config` makes the class a frozen dataclass (no decorator needed). Sizes come first
and positionally, options after a `KW_ONLY` marker, as STYLE.md asks:

    class MlpConfig(Config):
        d_input: int
        d_output: int
        _: KW_ONLY
        dropout: float = 0.5

        def init(self, device=None) -> Mlp: ...

Every field gets a `with_<field>(value)` builder returning a changed copy (made at class
creation; `Config`'s docstring says how a type checker sees them); `save(path)` and
`Config.load(path)` write and read JSON (atomically); nested configs nest in the JSON. A field
declared as a base class (`initializer: Initializer`) holding a subclass is written with the
class name as a tag, `{"KaimingUniform": {"gain": 0.57, ...}}`, as Burn's serde does for enums.
Lists become tuples, so every config hashes. Subclasses validate in `__post_init__` (calling
`super().__post_init__()` first) and raise ConfigError.

This module owns the Config machinery; the configs themselves live beside what they build.
"""

from __future__ import annotations

import dataclasses
import json
import os
import types
import typing
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, dataclass_transform

from ..errors import ConfigError

PathLike = str | os.PathLike[str]

# Re-exported so that configs written in modules with `from __future__ import annotations` (and
# doctests) find the `KW_ONLY` marker by name, as dataclasses resolves string annotations.
__all__ = ["KW_ONLY", "Config"]


@dataclass_transform(frozen_default=True)
class Config:
    """Base of every config: a frozen dataclass with builders and JSON round trips.

    >>> from dataclasses import KW_ONLY
    >>> from pyrite.module import Config
    >>> class DemoConfig(Config):
    ...     d_model: int
    ...     _: KW_ONLY
    ...     dropout: float = 0.1
    >>> c = DemoConfig(512).with_dropout(0.2)
    >>> c
    DemoConfig(d_model=512, dropout=0.2)
    >>> DemoConfig.from_json(c.to_json()) == c
    True

    The `with_<field>` builders are made at class creation, where a type checker cannot see
    them: for it alone (under `TYPE_CHECKING`), a `__getattr__` types any attribute it does not
    find on a config as a builder, `(value) -> Self`. At run time there is no `__getattr__`, and
    a missing attribute is still an AttributeError.
    """

    if TYPE_CHECKING:
        def __getattr__(self, name: str) -> Callable[[Any], Self]: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclass(frozen=True)(cls)
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]  # a dataclass by now
            name = f"with_{f.name}"
            if name not in cls.__dict__ and not _user_defined(cls, name):
                setattr(cls, name, _builder(f.name))

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, list):
                object.__setattr__(self, f.name, _tuples(value))

    # ---- builders ----------------------------------------------------------------------------
    def replace(self, **changes: Any) -> Self:
        """A copy with some fields changed (validated again)."""
        names = {f.name for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        unknown = sorted(set(changes) - names)
        if unknown:
            raise ConfigError(f"{type(self).__name__}: no field {', '.join(unknown)}; fields are "
                              f"{', '.join(sorted(names))}")
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    # ---- JSON --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready values (nested configs as dicts, tuples as lists)."""
        hints = _hints(type(self))
        return {f.name: _encode(getattr(self, f.name), hints.get(f.name, Any),
                                f"{type(self).__name__}.{f.name}")
                for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """The config from `to_dict`'s output; missing fields take their defaults."""
        if not isinstance(data, dict):
            raise ConfigError(f"{cls.__name__}: expected a JSON object, got "
                              f"{type(data).__name__}")
        hints = _hints(cls)
        fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise ConfigError(f"{cls.__name__}: unknown field {', '.join(map(repr, unknown))}; "
                              f"fields are {', '.join(fields)}")
        missing = [name for name, f in fields.items() if name not in data and f.init
                   and f.default is dataclasses.MISSING
                   and f.default_factory is dataclasses.MISSING]
        if missing:
            raise ConfigError(f"{cls.__name__}: missing field {', '.join(map(repr, missing))}")
        kwargs = {name: _decode(value, hints.get(name, Any), f"{cls.__name__}.{name}")
                  for name, value in data.items()}
        try:
            return cls(**kwargs)
        except TypeError as err:
            raise ConfigError(f"{cls.__name__}: {err}") from err

    def to_json(self) -> str:
        """The config as indented JSON."""
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_json(cls, text: str) -> Self:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ConfigError(f"{cls.__name__}: not valid JSON: {err}") from err
        return cls.from_dict(data)

    def save(self, path: PathLike) -> Path:
        """Write the config as JSON to `path` (atomically: a crash leaves the old file)."""
        from ..record.atomic import atomic_write
        text = self.to_json() + "\n"
        return atomic_write(path, lambda f: f.write(text.encode("utf-8")))

    @classmethod
    def load(cls, path: PathLike) -> Self:
        """The config saved at `path`; ConfigError names the file and what is wrong."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"{p}: no such config file") from None
        try:
            return cls.from_json(text)
        except ConfigError as err:
            raise ConfigError(f"{p}: {err}") from err


# ---- helpers -----------------------------------------------------------------------------------
def _user_defined(cls: type, name: str) -> bool:
    """Whether a base class defines `name` itself (not as a generated builder)."""
    for base in cls.__mro__[1:]:
        found = base.__dict__.get(name)
        if found is not None:
            return not getattr(found, "_pyrite_builder", False)
    return False


def _builder(name: str) -> Any:
    def build(self: Config, value: Any) -> Config:
        return dataclasses.replace(self, **{name: value})  # type: ignore[type-var]
    build.__name__ = f"with_{name}"
    build.__doc__ = f"A copy with `{name}` set to `value`."
    build._pyrite_builder = True  # type: ignore[attr-defined]
    return build


def _tuples(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_tuples(v) for v in value)
    return value


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    found = _HINTS.get(cls)
    if found is None:
        try:
            found = typing.get_type_hints(cls)
        except NameError:  # a forward reference we cannot resolve: fall back to untyped
            found = {}
        _HINTS[cls] = found
    return found


def _union_args(tp: Any) -> tuple[Any, ...]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.get_args(tp)
    return (tp,)


def _config_classes(tp: Any) -> list[type[Config]]:
    return [t for t in _union_args(tp) if isinstance(t, type) and issubclass(t, Config)]


def _encode(value: Any, tp: Any, where: str) -> Any:
    if isinstance(value, Config):
        body = value.to_dict()
        declared = _config_classes(tp)
        if declared == [type(value)]:
            return body
        return {type(value).__name__: body}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_encode(v, Any, where) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _encode(v, Any, where) for k, v in value.items()}
    raise ConfigError(f"{where}: a {type(value).__name__} cannot be saved as JSON; use numbers, "
                      f"strings, tuples, enums or nested configs")


def _subclass_named(base: type[Any], name: str) -> type[Any] | None:
    if base.__name__ == name:
        return base
    for sub in base.__subclasses__():
        found = _subclass_named(sub, name)
        if found is not None:
            return found
    return None


def _decode(value: Any, tp: Any, where: str) -> Any:
    if tp is Any:
        return _tuples(value)
    args = _union_args(tp)
    if value is None:
        return None
    if isinstance(value, dict):
        configs = _config_classes(tp)
        if not configs:
            return value
        if len(value) == 1:
            (key, body), = value.items()
            plain = {f.name for f in dataclasses.fields(configs[0])}  # type: ignore[arg-type]
            if len(configs) != 1:
                plain = set()
            if key not in plain and isinstance(body, dict):
                for base in configs:
                    found = _subclass_named(base, key)
                    if found is not None:
                        return found.from_dict(body)
        if len(configs) == 1:
            return configs[0].from_dict(value)
        raise ConfigError(f"{where}: cannot tell which of {[c.__name__ for c in configs]} "
                          f"this is; write it as {{\"ClassName\": {{...}}}}")
    for arg in args:
        if isinstance(arg, type) and issubclass(arg, Enum):
            try:
                return arg(value)
            except ValueError:
                continue
    if isinstance(value, list):
        for arg in args:
            origin = typing.get_origin(arg) or arg
            if origin in (tuple, list):
                inner = typing.get_args(arg)
                if origin is tuple and len(inner) == 2 and inner[1] is Ellipsis:
                    return tuple(_decode(v, inner[0], where) for v in value)
                if origin is tuple and len(inner) == len(value):
                    return tuple(_decode(v, t, where) for v, t in zip(value, inner, strict=True))
                return tuple(_decode(v, inner[0] if inner else Any, where) for v in value)
        return _tuples(value)
    if isinstance(value, int) and not isinstance(value, bool) and float in args \
            and int not in args:
        return float(value)
    _check_scalar(value, args, where)
    return value


_SCALARS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _check_scalar(value: Any, args: tuple[Any, ...], where: str) -> None:
    """ConfigError when a field declared only with plain types (int, float, bool, str, None)
    holds a value of none of them: `"batch_size": "abc"`, `"epochs": true`, `"lr": 1.5` for an
    int. Fields with other types are left to the config's own checks."""
    declared = [a for a in args if a is not type(None)]
    if not declared or any(a not in _SCALARS for a in declared):
        return
    for tp in declared:
        if isinstance(value, bool) != (tp is bool):
            continue
        if isinstance(value, tp) or (tp is float and isinstance(value, int)):
            return
    wanted = " or ".join(_SCALARS[a] for a in declared)
    shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:37]}..."
    raise ConfigError(f"{where}: expected {wanted}, got {shown}")
