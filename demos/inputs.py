"""The inputs a demo model accepts, field by field: one strict check for the server's API and
the pages (the same Python runs in both).

A model lists its `Field`s (name, JSON type, range or length, default); `check_inputs` takes a
decoded JSON value and returns the fields with defaults filled in, or raises `InputError` with
one sentence a client developer can act on: which field, what it must be, what was sent, and an
example of a valid body. JSON booleans are not numbers here, a float is not an integer, and an
unknown field is refused (a typo such as "temprature" is not silently ignored). The pixel lists'
items are checked by each model's `check_pixels`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyrite.argtypes import Range
from pyrite.errors import PyriteError

_KINDS = {int: "an integer", float: "a number", str: "a string", list: "a list"}


class InputError(PyriteError, ValueError):
    """A request's input does not fit the model's fields (the message names the field)."""


class NotAnObject(InputError):
    """A request's input is not a JSON object at all (a list, a string, ...)."""


@dataclass(frozen=True)
class Field:
    """One input field: its JSON type (`int`, `float`, `str` or `list`), whether it is required,
    its default, the numbers it may take (`range`) and the longest string or list it may be
    (`max_length`; `length` for an exact list length); `convert` checks and converts its items.
    `nullable`: JSON null is allowed."""

    name: str
    kind: type
    required: bool = False
    default: object = None
    range: Range | None = None
    max_length: int | None = None
    length: int | None = None
    nullable: bool = False
    #: turns a valid value into what the model takes, or raises ValueError naming the item at
    #: fault (a pixel list's `check_pixels`: its items checked in C where possible)
    convert: Callable[[Any], object] | None = None

    def problem(self, value: object) -> str | None:
        """What is wrong with `value` for this field, or None."""
        if value is None and self.nullable:
            return None
        if self.range is not None:
            found = self.range.problem(value)
            return None if found is None else f"'{self.name}' {found}"
        numeric = self.kind is float and isinstance(value, int)
        if isinstance(value, bool) or not (isinstance(value, self.kind) or numeric):
            return f"'{self.name}' must be {_KINDS[self.kind]}, got {_json_type(value)}"
        size = len(value) if isinstance(value, (str, list)) else None
        if size is not None and self.length is not None and size != self.length:
            return f"'{self.name}' must hold {self.length} items, got {size}"
        if size is not None and self.max_length is not None and size > self.max_length:
            unit = "characters" if isinstance(value, str) else "items"
            return f"'{self.name}' may hold at most {self.max_length} {unit}, got {size}"
        return None


def _json_type(value: object) -> str:
    """The JSON name of a decoded value's type, with the value when short."""
    kind = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "an object", type(None): "null"}.get(type(value), "a value")
    shown = repr(value)
    return f"{kind} ({shown})" if len(shown) <= 30 and not isinstance(value, (list, dict)) \
        else kind


def check_inputs(model: str, inputs: object, fields: Sequence[Field],
                 example: str) -> dict[str, object]:
    """`inputs` (a decoded JSON value) as a dict of every field, defaults filled in; InputError
    naming the first problem and showing `example`, a valid body.

    >>> fields = [Field("tokens", int, default=100, range=Range(0, 2000, integer=True))]
    >>> check_inputs("charlm", {}, fields, '{"tokens": 10}')
    {'tokens': 100}
    >>> check_inputs("charlm", {"tokens": True}, fields, '{"tokens": 10}')
    Traceback (most recent call last):
    ...
    pyrite.demos.inputs.InputError: charlm: 'tokens' must be an integer in [0, 2000], got True; ...
    """
    def refuse(problem: str, error: type[InputError] = InputError) -> InputError:
        return error(f"{model}: {problem}; send a JSON object such as {example}")

    if not isinstance(inputs, Mapping):
        raise refuse(f"the input must be a JSON object, got {_json_type(inputs)}", NotAnObject)
    names = [f.name for f in fields]
    unknown = sorted(str(k) for k in inputs if k not in names)
    if unknown:
        shown = ", ".join(repr(k[:40]) for k in unknown[:5])
        raise refuse(f"unknown field {shown}; the fields are {', '.join(names)}")
    out: dict[str, object] = {}
    for field in fields:
        if field.name not in inputs:
            if field.required:
                raise refuse(f"'{field.name}' is missing")
            out[field.name] = field.default
            continue
        value = inputs[field.name]
        problem = field.problem(value)
        if problem is not None:
            raise refuse(problem)
        if field.convert is not None and value is not None:
            try:
                value = field.convert(value)
            except ValueError as exc:
                raise refuse(f"'{field.name}': {str(exc).removeprefix(f'{model}: ')}") from None
        out[field.name] = float(value) if field.kind is float and value is not None else value
    return out


__all__ = ["Field", "InputError", "NotAnObject", "check_inputs"]
