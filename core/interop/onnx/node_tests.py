"""Run the ONNX project's backend node tests on a pyrite device and keep score.

The cases come from the `onnx` pip package itself: `onnx.backend.test.case.node` builds every
node test (model, inputs, expected outputs from ONNX's numpy reference), the same cases its
`onnx/backend/test/data/node/*` folders are generated from. Each case is loaded with pyrite's
reader, run on the device, and compared as ONNX's own runner does (shape equal, values within
the case's rtol/atol, 1e-3/1e-7 by default). A device that lacks 64-bit types computes them in
32 bits (webgpu); that is allowed when the values still match.

    python -m pyrite.interop.onnx.node_tests --device numpy            # scoreboard
    python -m pyrite.interop.onnx.node_tests -k conv --verbose          # some tests, reasons
    python -m pyrite.interop.onnx.node_tests --json out.json            # results as JSON

Statuses: `pass`; `fail` (ran, values or shape differ); `error` (an op raised while running);
`unsupported` (refused before running: op, attribute or dtype pyrite does not have).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from ...errors import OnnxError


@dataclass
class Result:
    name: str
    ops: list[str]
    status: str  # pass | fail | error | unsupported
    reason: str = ""


@dataclass
class Scoreboard:
    device: str
    onnx_version: str
    results: list[Result] = field(default_factory=list)

    def totals(self) -> Counter[str]:
        return Counter(r.status for r in self.results)

    def per_op(self) -> dict[str, Counter[str]]:
        out: dict[str, Counter[str]] = defaultdict(Counter)
        for r in self.results:
            for o in r.ops:
                out[o][r.status] += 1
        return dict(out)

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "onnx_version": self.onnx_version,
                "totals": dict(self.totals()), "total": len(self.results),
                "per_op": {k: dict(v) for k, v in sorted(self.per_op().items())},
                "results": [asdict(r) for r in self.results]}


def cases(pattern: str | None = None) -> Iterator[Any]:
    """The onnx package's node test cases whose name matches `pattern` (a regex)."""
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = node.collect_testcases(None)
    rx = re.compile(pattern) if pattern else None
    for case in sorted(found, key=lambda c: c.name):
        if rx is None or rx.search(case.name):
            yield case


def _ops(model: Any) -> list[str]:
    return sorted({n.op_type for n in model.graph.node})


def run_case(case: Any, device: str) -> Result:
    """Run one case on `device` and say how it went."""
    import numpy as np

    from ...data import TensorData
    from .reader import from_proto
    from .runtime import OnnxModel

    ops = _ops(case.model)
    try:
        graph = from_proto(case.model, source=case.name)
        model = OnnxModel(graph, device)
    except OnnxError as exc:
        return Result(case.name, ops, "unsupported", _first_line(str(exc), skip_header=True))
    except Exception as exc:  # noqa: BLE001 - a scoreboard records every failure
        return Result(case.name, ops, "unsupported", f"{type(exc).__name__}: {exc}")
    for inputs, expected in case.data_sets:
        feeds: dict[str, Any] = {}
        for info, value in zip(graph.feeds, inputs, strict=False):
            value = _as_array(value)
            if not isinstance(value, np.ndarray):
                return Result(case.name, ops, "unsupported",
                              f"input {info.name!r} is a {type(value).__name__}, not a tensor")
            if value.dtype.kind in "OSU":
                return Result(case.name, ops, "unsupported",
                              f"input {info.name!r} holds strings")
            try:
                feeds[info.name] = TensorData(np.require(value, requirements="C"))
            except Exception as exc:  # noqa: BLE001
                return Result(case.name, ops, "unsupported",
                              f"input {info.name!r} ({value.dtype}): {exc}")
        try:
            with np.errstate(all="ignore"):
                outs = model.run(feeds)
                got = [o.numpy() for o in outs]
        except Exception as exc:  # noqa: BLE001
            return Result(case.name, ops, "error", f"{type(exc).__name__}: "
                          f"{_first_line(str(exc))}")
        if len(expected) > len(got):
            return Result(case.name, ops, "fail",
                          f"{len(got)} outputs, expected {len(expected)}")
        for i, (want, have) in enumerate(zip(expected, got, strict=False)):
            why = _compare(np.asarray(_as_array(want)), have, case.rtol, case.atol)
            if why:
                return Result(case.name, ops, "fail", f"output {i}: {why}")
    return Result(case.name, ops, "pass")


def _as_array(value: Any) -> Any:
    """A case's input or output as an ndarray (cases hold arrays, numpy scalars or
    TensorProtos); sequences and the like come back as they are."""
    import numpy as np
    from onnx import TensorProto, numpy_helper

    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, np.generic):
        return np.asarray(value)
    return value


def _compare(want: Any, have: Any, rtol: float, atol: float) -> str:
    import numpy as np

    if want.dtype.kind in "OSU":
        return "expected strings"
    if tuple(want.shape) != tuple(have.shape):
        return f"shape {list(have.shape)}, expected {list(want.shape)}"
    if want.dtype.kind != have.dtype.kind and not (
            want.dtype.kind in "iu" and have.dtype.kind in "iu"):
        return f"dtype {have.dtype}, expected {want.dtype}"
    if want.dtype.itemsize < have.dtype.itemsize:
        return f"dtype {have.dtype}, expected {want.dtype}"
    if want.dtype == bool:
        bad = int((want != have).sum())
        return f"{bad} of {want.size} values differ" if bad else ""
    w = want.astype(np.float64)
    h = have.astype(np.float64)
    both_nan = np.isnan(w) & np.isnan(h)
    close = np.isclose(h, w, rtol=rtol, atol=atol) | both_nan | (w == h)
    if close.all():
        return ""
    bad = np.argwhere(~close)[0]
    idx = tuple(int(i) for i in bad)
    return (f"{int((~close).sum())} of {want.size} values differ, e.g. at {list(idx)}: "
            f"{h[idx]!r} vs {w[idx]!r}")


def _first_line(text: str, *, skip_header: bool = False) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if skip_header and len(lines) > 1:
        return "; ".join(lines[1:4])
    return lines[0] if lines else text


def score(device: str, pattern: str | None = None) -> Scoreboard:
    """Run every matching case on `device`."""
    import onnx

    board = Scoreboard(device, onnx.__version__)
    for case in cases(pattern):
        board.results.append(run_case(case, device))
    return board


def report(board: Scoreboard, *, verbose: bool = False, out: Any = None) -> None:
    """Print per test (failures only unless verbose), per op, then the totals."""
    out = out or sys.stdout
    for r in board.results:
        if verbose or r.status != "pass":
            print(f"{r.status:12s} {r.name}  {r.reason}", file=out)
    print("\nper op (pass/total):", file=out)
    for name, c in sorted(board.per_op().items()):
        total = sum(c.values())
        print(f"  {name:28s} {c['pass']:4d}/{total:<4d}", file=out)
    t = board.totals()
    print(f"\n{board.device}, onnx {board.onnx_version}: {t['pass']} of {len(board.results)} "
          f"node tests pass ({t['fail']} fail, {t['error']} error, {t['unsupported']} "
          f"unsupported)", file=out)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pyrite.interop.onnx.node_tests",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="numpy")
    parser.add_argument("-k", dest="pattern", help="run the tests whose name matches (regex)")
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("-v", "--verbose", action="store_true", help="list passing tests too")
    args = parser.parse_args(list(argv) if argv is not None else None)
    board = score(args.device, args.pattern)
    report(board, verbose=args.verbose)
    if args.json:
        from ...record.atomic import atomic_write
        blob = json.dumps(board.to_json(), indent=1).encode()
        atomic_write(args.json, lambda f: f.write(blob))
    return 0


if __name__ == "__main__":
    sys.exit(main())
