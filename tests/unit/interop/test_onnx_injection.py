"""A hostile ONNX file never runs code through `pyrite import-onnx`.

Every string of the file (graph and node names, value, input, output and initializer names,
symbolic dim names, doc strings, metadata, producer, domain, string attributes, the file's own
name) reaches generated code only escaped or sanitised, and the generated code passes an
allow-list (`pyrite.interop.onnx.safety`) before it is written or run. Each payload below, if
it ran, would create the file `pwned` in the test's folder.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import keyword

import pytest

onnx = pytest.importorskip("onnx")
np = pytest.importorskip("numpy")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from pyrite import onnx as ponnx  # noqa: E402
from pyrite import tensor  # noqa: E402
from pyrite.errors import OnnxError  # noqa: E402
from pyrite.interop.onnx import codegen, pysource, safety, writer  # noqa: E402
from pyrite.interop.onnx.runtime import identifier  # noqa: E402
from pyrite.record import BinFileRecorder  # noqa: E402

RNG = np.random.default_rng(0)
MARK = "pwned"  # each test runs in its tmp_path: a payload that ran would leave this file there
RUN = f"open({MARK!r}, 'w')"
SHELL = f"__import__('os').system('touch {MARK}')"

VECTORS = {
    "docstring_dq": f'x"""; {RUN}; """',
    "docstring_shell": f'x"""; {SHELL}; """',
    "docstring_sq": f"x'''; {RUN}; '''",
    "quote_sq": f"x'; {RUN}; '",
    "quote_dq": f'x"; {RUN}; "',
    "backslash_quote": f'x\\"""; {RUN} #',
    "trailing_backslash": "x\\",
    "escape_text": f"x\\N{{QUOTATION MARK}}\\x22\\x22\\x22; {RUN}; \\x22\\x22\\x22",
    "newline": f"x\n{RUN}\n",
    "docstring_newline": f'x"""\n{RUN}\n"""',
    "carriage_return": f'x"""\r{RUN}\r"""',
    "crlf": f"x\r\n{RUN}\r\n",
    "line_separator": f'x"""\u2028{RUN}\u2028"""',
    "paragraph_separator": f"x\u2029{RUN}",
    "vertical_tab": f'x"""\x0b{RUN}\x0b"""',
    "form_feed": f'x"""\x0c{RUN}\x0c"""',
    "next_line": f"x\x85{RUN}",
    "comment": f"x # {RUN}\n{RUN}",
    "fstring_braces": f"{{{RUN}}}{{x!r}}",
    "format_field": "{0.__class__.__init__.__globals__}",
    "null_byte": f'x\x00"""; {RUN}; """',
    "bidi_override": f"x\u202e; {RUN} #\u202d",
    "code_break": f"x); {RUN}; (",
    "assignment": f"x = {RUN}",
    "comma_bracket": f"x, y), {RUN}, [(",
    "dunder": "__class__",
    "dunder_import": "__import__",
    "long": "a" * 5000 + f'"""; {RUN}; """',
    "keyword_class": "class",
    "keyword_none": "None",
    "keyword_lambda": "lambda",
    "builtin_eval": "eval",
    "builtin_open": "open",
    "module_os": "os",
    "generator_O": "O",
    "generator_dev": "dev",
    "generator_self": "self",
    "generator_float": "float",
    "module_method": "load_file",
    "digits": "123",
    "digit_start": "1x",
    "unicode_digit": "\u0663x",
    "superscript": "x\u00b2",
    "ligature": "\ufb01",
    "accented": "\u00e9t\u00e9",
    "underscores": "__",
    "emoji": "\U0001f600",
}
_IDS = list(VECTORS)


def _hostile_model(v: str) -> onnx.ModelProto:
    """A valid model with `v` in every string field: two inputs whose names collide once
    sanitised, a Linear (MatMul) and a Param (Mul) named by the file, a string attribute
    (Cast's round_mode) in the generated call, and `v` as the symbolic batch dim."""
    x = helper.make_tensor_value_info(v, TensorProto.FLOAT, [v, 3], doc_string=v)
    x2 = helper.make_tensor_value_info(v + ".", TensorProto.FLOAT, [v, 3])
    y = helper.make_tensor_value_info(v + ":y", TensorProto.FLOAT, [v, 3])
    hidden = helper.make_tensor_value_info(v + "-h", TensorProto.FLOAT, [v, 3], doc_string=v)
    inits = [numpy_helper.from_array(RNG.standard_normal((3, 3)).astype(np.float32), v + "/w"),
             numpy_helper.from_array(RNG.standard_normal(3).astype(np.float32), v + "/s")]
    nodes = [
        helper.make_node("MatMul", [v, v + "/w"], [v + "-h"], name=v, doc_string=v),
        helper.make_node("Relu", [v + "-h"], [v + "+r"], name=v + "!", doc_string=v),
        helper.make_node("Mul", [v + "+r", v + "/s"], [v + "*m"], name=v + "?"),
        helper.make_node("Add", [v + "*m", v + "."], [v + "~a"], name=v + "&"),
        helper.make_node("Cast", [v + "~a"], [v + ":y"], name=v + "%", to=TensorProto.FLOAT,
                         round_mode=v),
    ]
    graph = helper.make_graph(nodes, v, [x, x2], [y], initializer=inits, doc_string=v,
                              value_info=[hidden])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name=v, producer_version=v, domain=v, doc_string=v)
    helper.set_model_props(model, {v: v, "note": v})
    return model


def _file_name(v: str) -> str:
    """`v` as a file name (no `/` or NUL; short enough for the file system)."""
    return v.replace("/", "_").replace("\x00", "_")[:60] + ".onnx"


def _write(tmp_path, model, v="m"):
    path = tmp_path / _file_name(v)
    path.write_bytes(model.SerializeToString())
    return path


def _load_class(result):
    spec = importlib.util.spec_from_file_location("pyrite_injection_test", result.module_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, result.class_name)


def _nothing_written(folder) -> bool:
    return not folder.exists() or not any(folder.iterdir())


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """Run in tmp_path, and check after the test that no payload left its marker there."""
    monkeypatch.chdir(tmp_path)
    yield
    assert not (tmp_path / MARK).exists(), "a payload from the ONNX file ran"


@pytest.mark.parametrize("v", VECTORS.values(), ids=_IDS)
def test_hostile_strings_import_and_run_like_the_runtime(v, tmp_path):
    path = _write(tmp_path, _hostile_model(v), v)
    result = codegen.import_onnx(path, tmp_path / "out")
    assert not (tmp_path / MARK).exists()
    source = result.module_path.read_bytes().decode("ascii")  # escapes keep it plain ASCII
    safety.check_source(source)
    cls = _load_class(result)  # importing the written module runs nothing of the file's either
    assert not (tmp_path / MARK).exists()
    assert v in cls.__doc__  # the docstring reads back the names exactly
    params = list(inspect.signature(cls.forward).parameters)[1:]
    assert len(set(params)) == 2 and all(p.isidentifier() and p.isascii() for p in params)
    model = cls("numpy").load_file(result.record_path, BinFileRecorder())
    runtime = ponnx.load(path, "numpy")
    a, b = (tensor(RNG.standard_normal((2, 3)).astype(np.float32), device="numpy")
            for _ in range(2))
    np.testing.assert_allclose(model(a, b).numpy(), runtime(a, b).numpy(), rtol=1e-6)


@pytest.mark.parametrize("v", [VECTORS["docstring_dq"], VECTORS["newline"],
                               VECTORS["line_separator"]], ids=["dq", "newline", "u2028"])
def test_cli_import_of_a_hostile_file(v, tmp_path, capsys):
    from pyrite.cli import build_parser

    path = _write(tmp_path, _hostile_model(v), v)
    args = build_parser().parse_args(["import-onnx", str(path), "--out", str(tmp_path / "c")])
    assert args.run(args) == 0
    assert "wrote" in capsys.readouterr().out
    module = next((tmp_path / "c").glob("*.py"))
    spec = importlib.util.spec_from_file_location("pyrite_injection_cli", module)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


def _relu_model(v: str, *, attr: str | None = None, op: str = "Relu", domain: str = "",
                **attrs) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])
    if attr is not None:
        attrs[attr] = 1
    node = helper.make_node(op, ["x"], ["y"], name=v, domain=domain, **attrs)
    graph = helper.make_graph([node], v, [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid(domain or "x", 1)])


PLACES = {
    "attribute_name": lambda v: _relu_model(v, attr=v),
    "op_type": lambda v: _relu_model(v, op=v),
    "node_domain": lambda v: _relu_model(v, domain=v or "d"),
    "cast_to_string": lambda v: _relu_model(v, op="Cast", to=v),
    "gelu_approximate": lambda v: _relu_model(v, op="Gelu", approximate=v),
}


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("v", VECTORS.values(), ids=_IDS)
def test_hostile_strings_elsewhere_run_or_are_refused_cleanly(v, place, tmp_path):
    """Unknown attributes, ops and domains, and string attributes an op rejects, are refused
    with OnnxError and nothing written; a string an op accepts (`Cast(to='float')`) runs."""
    path = _write(tmp_path, PLACES[place](v))
    try:
        result = codegen.import_onnx(path, tmp_path / "out")
    except OnnxError:
        assert _nothing_written(tmp_path / "out")
        return
    assert place == "cast_to_string"
    x = tensor(RNG.standard_normal((1, 3)).astype(np.float32), device="numpy")
    np.testing.assert_allclose(_load_class(result)("numpy")(x).numpy(),
                               ponnx.load(path, "numpy")(x).numpy())


def test_names_that_collide_once_sanitised_stay_apart(tmp_path):
    names = ["a.b", "a-b", "a b", "a/b", "a_b", "a\u00e9b", "_a_b_"]
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in names]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    nodes, acc = [], names[0]
    for i, n in enumerate(names[1:]):
        out = "y" if i == len(names) - 2 else f"{n}+"
        nodes.append(helper.make_node("Add", [acc, n], [out], name=n))
        acc = out
    graph = helper.make_graph(nodes, "g", ins, [y])
    path = _write(tmp_path, helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)]))
    result = codegen.import_onnx(path, tmp_path / "out", batch=False)
    cls = _load_class(result)
    params = list(inspect.signature(cls.forward).parameters)[1:]
    assert len(set(params)) == len(names)
    model = cls("numpy").load_file(result.record_path, BinFileRecorder())
    xs = [tensor(np.full(2, float(i), np.float32), device="numpy") for i in range(len(names))]
    np.testing.assert_allclose(model(*xs).numpy(), np.full(2, sum(range(len(names)))))


EXTRA_NAMES = ["", "_", "True", "await", "match", "exec", "subprocess", "__init__", "9"]


@pytest.mark.parametrize("name", [*VECTORS.values(), *EXTRA_NAMES],
                         ids=[*_IDS, *(f"extra{i}" for i in range(len(EXTRA_NAMES)))])
def test_identifier_is_always_a_plain_safe_name(name):
    taken: set[str] = set()
    first, second = identifier(name, taken), identifier(name + "\u00b7", taken)
    for ident in (first, second):
        assert ident.isascii() and ident.isidentifier() and not keyword.iskeyword(ident)
        assert not ident.startswith("_") and ident not in safety.FORBIDDEN
    assert first != second


@pytest.mark.parametrize("v", VECTORS.values(), ids=_IDS)
def test_text_reaches_code_as_exact_ascii_literals(v):
    doc = pysource.doc_text(v)
    assert doc.isascii() and doc.isprintable()
    assert ast.literal_eval(f'"""{doc}"""') == v
    for value in (v, [v, "a, b", "(["]):
        code = pysource.fmt(value)
        assert code.isascii() and ast.literal_eval(code) == value


def test_long_calls_split_outside_string_literals():
    line = "y = O.Cast(x, to=1, round_mode=" + ascii("a, b), (c" * 12) + ")"
    wrapped = pysource.wrap(line, 8)
    assert "\n" in wrapped and ast.parse(wrapped.strip())


# ---- the checker itself ----------------------------------------------------------------------

TEMPLATE = '''"""M: generated."""
from __future__ import annotations

import pyrite
from pyrite import activation, nn
from pyrite.interop.onnx import functional as O
from pyrite.module import Module, Param
from pyrite.tensor import Tensor
MODULE_LINE

class M(Module):
    """Inputs: x."""

    def __init__(self, device: str | pyrite.Backend | None = None) -> None:
        self.fc = nn.LinearConfig(3, 3).init(device)
        self.w = Param(O.zeros([3], 'f32', device), require_grad=False)

    @pyrite.compile(warn=False, inference=True)
    def forward(self, x: Tensor) -> Tensor:
        h: Tensor = self.fc(x) * self.w.val + -1.0
        a, _ = O.Split(h, [1, 2], axis=1)
        STATEMENT
        return activation.relu(h.reshape([-1, 3]))
'''


def _source(module_line: str = "", statement: str = "pass") -> str:
    return TEMPLATE.replace("MODULE_LINE", module_line).replace("STATEMENT", statement)


BAD_MODULE_LINES = [
    "import os", "import sys", "import subprocess", "import pyrite as os", "import pyrite.nn",
    "from os import system", "from pyrite import os", "from . import codegen",
    "from pyrite.module import Module as eval", "__import__('os').system('true')",
    "exec('1')", "x = 1", "def f(): pass", "if True: pass", "print(1)",
]
BAD_STATEMENTS = [
    "__import__('os')", "h = __import__('os')", "h = eval('1')", "h = exec('1')",
    "h = compile('1', 'f', 'eval')", "h = open('f', 'w')", "h = getattr(self, 'fc')",
    "h = globals()", "h = vars()", "h = os.system('true')", "h = sys.modules",
    "h = subprocess.run(['true'])", "h = self.__class__", "h = x.__globals__",
    "h = '{0.__class__}'.format(x)", "h = str('{0}').format(x)", "h = O.__dict__",
    "h = O.NotAnOperator(x)", "h = nn.Sequential", "h = activation.os", "h = pyrite.load",
    "h = x.tolist", "h = (1).real", "h = lambda: 0", "h = [v for v in x]", "h = f'{x}'",
    "h = {1: 2}", "h = {1}", "h = x if x else x", "h = x[1:2]", "h = (h := x)", "h = x == x",
    "h = not x", "h = b'bytes'", "h = ...", "h = x(*x)", "h = x(**x)", "del self.fc",
    "del O", "del self", "del x", "del a[0]", "global h", "while True: pass",
    "for v in x: pass", "with x: pass",
    "try:\n            pass\n        finally:\n            pass", "import os", "h.y = x",
    "x[0] = h", "h += x", "assert h", "raise ValueError", "h = _", "_h = x", "h = self._x",
    "h = self.save_file('f')", "h = self.load_file", "h = self.fc.save_file",
]


def test_the_checker_accepts_what_the_generator_writes():
    safety.check_source(_source())
    safety.check_source(_source(statement="del a"))  # freeing locals the method assigned


@pytest.mark.parametrize("line", BAD_MODULE_LINES)
def test_the_checker_refuses_module_level_code(line):
    with pytest.raises(OnnxError, match="generated code refused") as info:
        safety.check_source(_source(module_line=line))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("statement", BAD_STATEMENTS)
def test_the_checker_refuses_statements_outside_the_allow_list(statement):
    with pytest.raises(OnnxError, match="generated code refused") as info:
        safety.check_source(_source(statement=statement))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("change", [
    ("class M(Module):", "class M(Module, metaclass=type):"), ("class M(Module):", "class M:"),
    ("class M(Module):", "@eval\nclass M(Module):"),
    ("    def forward(self, x", "    @staticmethod\n    def forward(self, x"),
    ("    @pyrite.compile(warn=False, inference=True)", "    @staticmethod"),
    ("(warn=False, inference=True)", "(warn=False)"),
    ("(warn=False, inference=True)", "(warn=False, inference=__import__('os'))"),
    ("@pyrite.compile(", "@compile("),
    ("    @pyrite.compile(warn=False, inference=True)\n",
     "    @pyrite.compile(warn=False, inference=True)\n" * 2),
    ("    def __init__", "    @pyrite.compile(warn=False, inference=True)\n    def __init__"),
    ("def forward(self, x: Tensor)", "def forward(self, *x)"),
    ("def forward(self, x: Tensor)", "def forward(self, x=open('f'))"),
    ("def forward(self, x: Tensor)", "def forward(self, x, **kw)"),
    ("def forward(self, x: Tensor)", "def forward(x)"),
    ("    def forward", "    def helper(self) -> None:\n        pass\n\n    def forward"),
    ("    def forward", "    x = 1\n\n    def forward"),
    ('"""Inputs: x."""', '"""Inputs: x."""\n    """again"""'),
    ("-> Tensor:", "-> __import__('os'):"),
    ('"""M: generated."""', '"""M: generated."""\r'),
    ('"""M: generated."""', '"""M: generated.\u2028"""'),
    ('"""M: generated."""', '"""M: generated.\x0c"""'),
    ('"""M: generated."""', '"""M: generated.\x00"""'),
    ('"""M: generated."""', '"""M: generated.\t"""'),
    ('"""M: generated."""', '"""M: \u00e9"""'),
], ids=lambda c: ascii(c[1])[:40] if isinstance(c, tuple) else None)
def test_the_checker_refuses_other_shapes_and_characters(change):
    old, new = change
    source = _source()
    assert old in source
    with pytest.raises(OnnxError, match="generated code refused"):
        safety.check_source(source.replace(old, new, 1))


def test_build_checks_before_running(tmp_path):
    gen = codegen.Generated(_source(statement=f"h = {RUN}"), "M")
    with pytest.raises(OnnxError, match="generated code refused"):
        codegen.build(gen)
    assert not (tmp_path / MARK).exists()


def test_a_refused_module_writes_nothing(tmp_path, monkeypatch):
    path = _write(tmp_path, _hostile_model("x"))
    real = writer.Writer.source

    def tampered(self, header):
        return real(self, header).replace("import pyrite\n", "import pyrite\nimport os\n", 1)

    monkeypatch.setattr(writer.Writer, "source", tampered)
    with pytest.raises(OnnxError, match=r"generated code refused.*'os'"):
        codegen.import_onnx(path, tmp_path / "out")
    assert _nothing_written(tmp_path / "out")


@pytest.mark.parametrize("name", ["os", "None", "class", "O", "Module", "_M", "M-1", "\u00c9"])
def test_bad_class_names_are_refused(name, tmp_path):
    path = _write(tmp_path, _hostile_model("x"))
    with pytest.raises(OnnxError, match="class name"):
        codegen.import_onnx(path, tmp_path / "out", class_name=name)
    assert _nothing_written(tmp_path / "out")


@pytest.mark.parametrize("stem", ["None", "o", "class", "123", "O"])
def test_default_class_names_from_odd_file_names_are_plain(stem, tmp_path):
    path = tmp_path / f"{stem}.onnx"
    path.write_bytes(_hostile_model("x").SerializeToString())
    result = codegen.import_onnx(path, tmp_path / "out")
    assert result.class_name.isidentifier() and not keyword.iskeyword(result.class_name)
    _load_class(result)
