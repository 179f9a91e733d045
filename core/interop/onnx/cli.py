"""`pyrite import-onnx MODEL.onnx --out DIR`: generate a pyrite module and its record."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ...argtypes import path_arg
from ...errors import ConfigError


def _shapes(values: list[str] | None) -> dict[str, Sequence[int]] | None:
    if not values:
        return None
    out: dict[str, Sequence[int]] = {}
    for item in values:
        name, sep, dims = item.partition("=")
        try:
            if not sep:
                raise ValueError
            out[name] = [int(d) for d in dims.split(",")]
        except ValueError:
            raise ConfigError(f"--input-shape takes NAME=D1,D2,..., got {item!r}; for "
                              f"example --input-shape x=1,3,224,224") from None
    return out


def _run(args: argparse.Namespace) -> int:
    """Import (or check) the model; its errors are the `pyrite` command's one line, status 2."""
    from .codegen import import_onnx
    from .registry import problems, summarised

    if args.check:
        from .reader import read
        found = problems(read(args.model))
        for line in summarised(found):
            print(line)
        print(f"{args.model}: {'all operators supported' if not found else f'{len(found)} unsupported item(s)'}")  # noqa: E501
        return 1 if found else 0
    result = import_onnx(args.model, args.out, name=args.name, class_name=args.class_name,
                         recorder=args.recorder, precision=args.precision,
                         input_shapes=_shapes(args.input_shape), batch=not args.fixed_batch)
    print(f"wrote {result.module_path} (class {result.class_name}) and {result.record_path}")
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("import-onnx", help="generate a pyrite module and record from ONNX",
                       description=__doc__)
    p.add_argument("model", type=path_arg, help="the .onnx file")
    p.add_argument("--out", default=".", type=path_arg,
                   help="folder for the module and record (default .)")
    p.add_argument("--name", help="file stem of the module and record (default: the model's)")
    p.add_argument("--class-name", help="the generated Module subclass' name (default: from "
                   "the model's name)")
    p.add_argument("--recorder", default="bin",
                   choices=["bin", "bin-gz", "mpk", "mpk-gz", "json", "json-gz"],
                   help="record format (default bin)")
    p.add_argument("--precision", default="full", choices=["full", "half", "double"],
                   help="float precision of the record (default full)")
    p.add_argument("--input-shape", action="append", metavar="NAME=D1,D2,...",
                   help="an input's shape where the model leaves dims symbolic (repeatable)")
    p.add_argument("--fixed-batch", action="store_true",
                   help="keep the inputs' leading dim as declared (default: it is a batch "
                        "size the generated code accepts any value of)")
    p.add_argument("--check", action="store_true",
                   help="only list what pyrite cannot run, then exit (1 if anything)")
    p.set_defaults(run=_run)
