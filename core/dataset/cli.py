"""`pyrite dataset`: look at a dataset source and pack it for web pages.

    pyrite dataset info SOURCE            columns, rows and the first item
    pyrite dataset pack SOURCE --out F    write a dataset pack (.pyds) that pages read

SOURCE is what `open_dataset` reads (hf:NAME[:SUBSET], Parquet, FILE.db:TABLE, a .pyds pack).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import DatasetError
from .sources import SPEC_HELP, open_dataset


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _info(args: argparse.Namespace) -> int:
    ds = open_dataset(args.source, args.split)
    print(f"{args.source} ({args.split}): {ds.len():,} rows")
    first = ds.get(0)
    if first is not None:
        for name, value in first.items():
            print(f"  {name}: {type(value).__name__}  e.g. {_short(value)}")
    return 0


def _pack(args: argparse.Namespace) -> int:
    from .pack import write_pack

    ds = open_dataset(args.source, args.split)
    n = ds.len() if args.limit is None else min(args.limit, ds.len())
    columns = args.columns.split(",") if args.columns else None

    def rows() -> Any:
        for i in range(n):
            row = ds.get(i)
            if row is None:
                raise DatasetError(f"{args.source}: row {i} vanished while it was read")
            if columns is not None:
                missing = [c for c in columns if c not in row]
                if missing:
                    raise DatasetError(f"{args.source} has no column(s) {missing}; it has "
                                       f"{sorted(row)}")
                row = {c: row[c] for c in columns}
            yield row

    path = write_pack(args.out, rows(), meta={"source": args.source, "split": args.split})
    print(f"Packed {n:,} rows of {args.source} ({args.split}) into {path} "
          f"({path.stat().st_size / 1e6:.1f} MB)")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add `dataset` to the `pyrite` command."""
    parser = subparsers.add_parser("dataset", help="inspect a dataset source, pack it for pages",
                                   description=f"Dataset sources: {SPEC_HELP}, or a .pyds pack.")
    actions = parser.add_subparsers(dest="action", required=True)
    info = actions.add_parser("info", help="columns, rows and the first item of a source")
    pack = actions.add_parser("pack", help="write a dataset pack (.pyds) that web pages read")
    for p in (info, pack):
        p.add_argument("source", help=f"where the data is: {SPEC_HELP}")
        p.add_argument("--split", default="train", help="the split of a Hugging Face dataset "
                       "(default train)")
    pack.add_argument("--out", type=Path, required=True, help="the .pyds file to write")
    pack.add_argument("--columns", help="comma-separated columns to keep (default: all)")
    pack.add_argument("--limit", type=int, metavar="N", help="only the first N rows")
    # errors (DatasetError, OSError) reach the command's one error path (pyrite.cli_errors)
    info.set_defaults(run=_info)
    pack.set_defaults(run=_pack)
