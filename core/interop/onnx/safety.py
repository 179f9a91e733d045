"""The allow-list that code `pyrite import-onnx` generates must pass before it is written or run.

Every name in an ONNX file is escaped or sanitised by the generator, so its code should never
hold anything but what the generator itself writes. `check_source` makes sure of that: it
parses the source and walks the tree, accepting only these forms and refusing everything else
(with an `OnnxError` naming the first problem):

- the text: printable ASCII and newlines only (no `\\r`, form feeds, NUL, line separators or
  bidi controls), and it parses;
- the module: an optional docstring, `from __future__ import annotations`, `import pyrite`,
  the `from pyrite... import ...` lines of `IMPORTS`, then `class X(Module):` definitions;
- a class: an optional docstring, then `def` statements named `__init__` or `forward`, with
  plain parameters (`self` first, defaults only `None`), no decorators but `FORWARD_DECORATOR`
  on `forward` (compared as a whole tree, so its `compile` is pyrite's);
- a function body: `name = ...`, `name: Tensor = ...`, `a, b = ...`, `self.attr = ...`,
  `del a, b` (of names the method assigns), `return ...` and `pass`;
- an expression: calls (no `*` or `**`), attribute reads, names, constants (str, int, float,
  bool, None), lists, tuples, subscripts, unary `-`/`+`, and `+ - * /` (`|` in annotations).

A name must be one the code binds itself (an import, the class, a parameter, an assignment) or
one of the builtins the generator writes (`float`, `str`, `tuple`). An attribute must be one
the generator writes: a `self.x` the code assigns (`self.x = ...`), an ONNX operator (or
`constant`, `zeros`) of `O`, a name of `MODULE_ATTRS` on its module, or a method of `METHODS`
(`.val`, `.reshape`, ...) on anything else but a constant. No name or attribute may be in
`FORBIDDEN` or start with an underscore (so no dunders), bar the method name `__init__` and the
target `_` (an unused output). A generator change that writes something new must add it here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ...errors import OnnxError

#: the `from MODULE import NAME as ALIAS` lines generated code may hold
IMPORTS = frozenset({
    ("__future__", "annotations", None), ("pyrite", "activation", None),
    ("pyrite", "consuming", None),
    ("pyrite", "nn", None), ("pyrite.creation", "cat", None),
    ("pyrite.interop.onnx", "functional", "O"), ("pyrite.module", "Module", None),
    ("pyrite.module", "Param", None), ("pyrite.tensor", "Tensor", None),
})
#: the attributes generated code reads from the modules it imports (`O`: also every operator)
MODULE_ATTRS = {
    "pyrite": frozenset({"Backend", "TensorData"}),
    "activation": frozenset({"relu", "sigmoid", "tanh"}),
    "consuming": frozenset({"relu", "sigmoid", "tanh", "add", "sub", "mul", "div"}),
    "nn": frozenset({"Conv2dConfig", "LinearConfig", "BatchNormConfig", "LayerNormConfig",
                     "MaxPool2dConfig", "AvgPool2dConfig"}),
    "O": frozenset({"constant", "zeros"}),
}
#: the attributes generated code reads from anything else (a layer config, param or tensor)
METHODS = frozenset({"init", "val", "device", "reshape", "matmul", "permute", "softmax"})
#: builtins the generator writes (`float('inf')`; `str | ...` and `tuple[...]` annotations)
BUILTINS = frozenset({"float", "str", "tuple"})
#: names no generated code binds, reads or reaches as an attribute (sanitised names avoid them)
FORBIDDEN = frozenset({
    "__import__", "__builtins__", "builtins", "eval", "exec", "compile", "open", "getattr",
    "setattr", "delattr", "globals", "locals", "vars", "breakpoint", "exit", "quit", "os",
    "sys", "subprocess", "importlib", "format", "format_map", "f_globals", "f_locals",
    "f_builtins", "f_back", "tb_frame", "gi_frame", "cr_frame", "ag_frame", "gi_code",
})
_METHODS = frozenset({"__init__", "forward"})
#: the one decorator generated code holds: `forward` replayed as a compiled step
FORWARD_DECORATOR = "pyrite.compile(warn=False, inference=True)"
_FORWARD_DECORATOR = ast.dump(ast.parse(FORWARD_DECORATOR, mode="eval").body)
_BINARY = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.BitOr)
_UNARY = (ast.USub, ast.UAdd)
_CONSTANTS = (str, int, float, bool, type(None))


class _Refused(Exception):
    def __init__(self, node: ast.AST | None, problem: str) -> None:
        super().__init__(problem)
        self.line = getattr(node, "lineno", None)


def check_source(source: str) -> None:
    """Refuse (OnnxError, one line) generated code holding anything the generator never
    writes; see the module's docstring for what passes."""
    try:
        _check_text(source)
        try:
            tree = ast.parse(source)
        except SyntaxError as exc:
            raise _Refused(None, f"it does not parse ({exc.msg}, line {exc.lineno})") from None
        _Checker(tree).module(tree)
    except _Refused as exc:
        where = f" (line {exc.line})" if exc.line else ""
        raise OnnxError(f"generated code refused, nothing written or run: {exc}{where}") from None


def _check_text(source: str) -> None:
    for number, line in enumerate(source.split("\n"), 1):
        bad = next((ch for ch in line if not " " <= ch <= "~"), None)
        if bad is not None:
            raise _Refused(None, f"character {bad!a} outside printable ASCII on line {number}")


class _Checker:
    """Walks a parsed module, raising _Refused at the first form outside the allow-list."""

    def __init__(self, tree: ast.Module) -> None:
        self.bound = BUILTINS | set(_bound_names(tree))
        self.fields = set(_self_fields(tree))
        self.operators = _operators()

    def module(self, tree: ast.Module) -> None:
        for i, stmt in enumerate(tree.body):
            if i == 0 and _is_docstring(stmt):
                continue
            if isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if (a.name, a.asname) != ("pyrite", None):
                        raise _Refused(stmt, f"import of {a.name!r} (only `import pyrite`)")
            elif isinstance(stmt, ast.ImportFrom):
                self.import_from(stmt)
            elif isinstance(stmt, ast.ClassDef):
                self.class_def(stmt)
            else:
                raise _Refused(stmt, f"a module-level {type(stmt).__name__} statement")

    def import_from(self, stmt: ast.ImportFrom) -> None:
        for alias in stmt.names:
            if stmt.level or (stmt.module, alias.name, alias.asname) not in IMPORTS:
                raise _Refused(stmt, f"import of {alias.name!r} from {stmt.module!r}")

    def class_def(self, stmt: ast.ClassDef) -> None:
        _name(stmt, stmt.name)
        bases = [b.id for b in stmt.bases if isinstance(b, ast.Name)]
        if bases != ["Module"] or len(stmt.bases) != 1 or stmt.keywords or (
                stmt.decorator_list or getattr(stmt, "type_params", None)):
            raise _Refused(stmt, f"class {stmt.name!r} is not a plain Module subclass")
        for i, item in enumerate(stmt.body):
            if i == 0 and _is_docstring(item):
                continue
            if not isinstance(item, ast.FunctionDef) or item.name not in _METHODS:
                raise _Refused(item, "a class member other than __init__ or forward")
            self.function(item)

    def function(self, fn: ast.FunctionDef) -> None:
        a = fn.args
        decorators = [ast.dump(d) for d in fn.decorator_list]
        allowed = decorators == [_FORWARD_DECORATOR] and fn.name == "forward"
        if ((decorators and not allowed) or getattr(fn, "type_params", None) or a.posonlyargs
                or a.vararg or a.kwonlyargs or a.kwarg or not a.args or a.args[0].arg != "self"
                or any(not (isinstance(d, ast.Constant) and d.value is None)
                       for d in a.defaults)):
            raise _Refused(fn, f"method {fn.name!r} has a signature the generator never writes")
        for arg in a.args:
            _name(arg, arg.arg)
            if arg.annotation is not None:
                self.expr(arg.annotation)
        if fn.returns is not None:
            self.expr(fn.returns)
        assigned = {n.id for stmt in fn.body for n in ast.walk(stmt)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for stmt in fn.body:
            if isinstance(stmt, ast.Delete):
                for t in stmt.targets:
                    if not isinstance(t, ast.Name) or t.id not in assigned:
                        raise _Refused(stmt, "a del of something other than a local the "
                                             "method assigns")
                    _name(t, t.id)
                continue
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            self.target(stmt.targets[0])
            self.expr(stmt.value)
        elif isinstance(stmt, ast.AnnAssign) and stmt.simple and stmt.value is not None:
            self.target(stmt.target)
            self.expr(stmt.annotation)
            self.expr(stmt.value)
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            self.expr(stmt.value)
        elif not isinstance(stmt, ast.Pass):
            raise _Refused(stmt, f"a {type(stmt).__name__} statement in a method")

    def target(self, node: ast.expr) -> None:
        if isinstance(node, ast.Name):
            if node.id != "_":
                _name(node, node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                node.value.id == "self"):
            _name(node, node.attr)
        elif isinstance(node, ast.Tuple) and node.elts:
            for elt in node.elts:
                if not isinstance(elt, ast.Name):
                    raise _Refused(node, "an unpacking target other than plain names")
                self.target(elt)
        else:
            raise _Refused(node, f"assignment to a {type(node).__name__}")

    def expr(self, node: ast.expr) -> None:
        if isinstance(node, ast.Constant):
            if type(node.value) not in _CONSTANTS:
                raise _Refused(node, f"a {type(node.value).__name__} constant")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            _name(node, node.id)
            if node.id not in self.bound:
                raise _Refused(node, f"name {node.id!r}, which the code never binds")
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            self.attribute(node)
        elif isinstance(node, ast.Call):
            self.call(node)
        elif isinstance(node, (ast.List, ast.Tuple)) and isinstance(node.ctx, ast.Load):
            for elt in node.elts:
                self.expr(elt)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            self.expr(node.value)
            self.expr(node.slice)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, _UNARY):
            self.expr(node.operand)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, _BINARY):
            self.expr(node.left)
            self.expr(node.right)
        else:
            raise _Refused(node, f"a {type(node).__name__} expression")

    def attribute(self, node: ast.Attribute) -> None:
        base, attr = node.value, node.attr
        _name(node, attr)
        owner = base.id if isinstance(base, ast.Name) else None
        if owner == "O":
            allowed = attr in MODULE_ATTRS["O"] or attr in self.operators
        elif owner in MODULE_ATTRS:
            allowed = attr in MODULE_ATTRS[owner]
        else:
            allowed = attr in self.fields if owner == "self" else (
                attr in METHODS and not isinstance(base, ast.Constant))
        if not allowed:
            raise _Refused(node, f"the attribute {attr!r} of {ast.unparse(base)[:40]!r}")
        self.expr(base)

    def call(self, node: ast.Call) -> None:
        self.expr(node.func)
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise _Refused(node, "a *args call")
            self.expr(arg)
        for kw in node.keywords:
            if kw.arg is None:
                raise _Refused(node, "a **kwargs call")
            _name(node, kw.arg)
            self.expr(kw.value)


def _operators() -> frozenset[str]:
    from .registry import supported

    return frozenset(supported())


def _name(node: ast.AST, name: str) -> None:
    """Refuse a forbidden name, or one starting with an underscore (so any dunder)."""
    if name in FORBIDDEN or name.startswith("_"):
        raise _Refused(node, f"the name {name!r}")


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(
        stmt.value.value, str)


def _bound_names(tree: ast.Module) -> Iterator[str]:
    """Every name the module binds: imports, classes, parameters and assignment targets."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from ((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.arg):
            yield node.arg
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.id


def _self_fields(tree: ast.Module) -> Iterator[str]:
    """The attributes the code assigns on `self` (its layers, params and constants)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(
                node.value, ast.Name) and node.value.id == "self":
            yield node.attr


__all__ = ["BUILTINS", "FORBIDDEN", "IMPORTS", "METHODS", "MODULE_ATTRS", "check_source"]
