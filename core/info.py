"""`python -m pyrite.info [backends|ops]`: what this installation can do.

`backends` lists each device with its status (and WebGPU adapters when that backend is
present); `ops` prints, per backend, which of the ops in Burn's tables run there.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .coverage import BURN_OPS, coverage
from .device import backend_names, decorator_names, device


def _try(name: str) -> tuple[Any, str]:
    try:
        return device(name), "available"
    except Exception as exc:  # noqa: BLE001 - report, don't crash
        return None, f"unavailable: {exc}"


def report_backends(names: list[str] | None = None) -> str:
    """Each device's status (default: every registered backend), with its WebGPU adapters."""
    lines = ["Backends:"]
    for name in names or backend_names():
        found, status = _try(name)
        lines.append(f"  {name:<10} {status}")
        adapters = getattr(found, "adapter_info", None)
        if callable(adapters):
            for key, value in adapters().items():
                lines.append(f"      {key}: {value}")
    decorators = ", ".join(f"{d}<NAME>" for d in decorator_names())
    lines.append(f"Decorators: {decorators} (e.g. autodiff<numpy>)")
    return "\n".join(lines)


def report_ops(names: list[str] | None = None, *, verbose: bool = False) -> str:
    total = len(BURN_OPS)
    lines = [f"Burn tensor ops (quantization excluded): {total}"]
    for name in names or backend_names() + ["autodiff<numpy>"]:
        found, status = _try(name)
        if found is None:
            lines.append(f"  {name:<18} -/{total}  ({status})")
            continue
        cov = coverage(found)
        lines.append(f"  {name:<18} {len(cov.implemented)}/{total}")
        groups: dict[str, list[str]] = {}
        for entry in cov.implemented:
            groups.setdefault(entry.group, []).append(entry.name)
        if verbose:
            for group, ops in groups.items():
                lines.append(f"      {group} ({len(ops)}): {', '.join(ops)}")
        for entry, why in cov.missing:
            lines.append(f"      missing {entry.group}.{entry.name}: {why}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pyrite info", description=__doc__)
    parser.add_argument("what", nargs="?", choices=["backends", "ops"], default="backends")
    parser.add_argument("--backend", action="append", help="limit the report to these devices")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every op")
    args = parser.parse_args(argv)
    if args.what == "ops":
        print(report_ops(args.backend, verbose=args.verbose))
    else:
        print(report_backends(args.backend))
    return 0


if __name__ == "__main__":
    sys.exit(main())
