"""Value lifetimes in generated forward code: `del` after a value's last use, and the last use
of a temporary handed to `pyrite.consuming` so its memory takes the result.

Generated code binds every ONNX value to a local; without `del`, each stays alive until
`forward` returns (peak memory is the sum of all activations, and numpy can never reuse a
buffer). `plan` rewrites the statement list the writer made:

- after each statement, `del` the locals it read for the last time (never a feed: the caller
  still holds it; never what `forward` returns), and those bound but never read;
- a statement the writer marked as able to consume an operand (an activation, `+ - * /`) is
  replaced by its `consuming.*` form when that operand is *owned*: bound by a statement that
  makes new memory (a layer, an activation, arithmetic, a concatenation of several values,
  softmax, matmul), read only by such statements (so no reshape, transpose or operator call
  ever made a view of it or passed it through), not a feed, not returned, read once by this
  statement, and read for the last time here.

Parsing each statement with `ast` gives its targets and reads; nothing here writes code beyond
`del` lines: the replacement statements come from the writer.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field


@dataclass
class Reuse:
    """A statement's `consuming` forms: operand local -> the statement that gives it up."""

    forms: dict[str, str] = field(default_factory=dict)


def _names(stmt: str) -> tuple[list[str], list[str]]:
    """The locals a statement binds and those it reads (in order, repeats kept)."""
    tree = ast.parse(textwrap.dedent(stmt))
    bound: list[str] = []
    read: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else read).append(node.id)
    return bound, read


def plan(body: list[str], ret: str, feeds: set[str], fresh: set[str],
         reuse: dict[str, Reuse], indent: int = 8) -> list[str]:
    """`body` with `del` lines and `consuming` forms (see the module doc). `fresh`: locals bound
    by statements that make new memory; `reuse`: a statement's target -> its consuming forms."""
    try:
        parsed = [_names(s) for s in body]
        returned_names = _names(ret)[1]
    except SyntaxError:  # a name no sanitising could save: the safety check refuses the module
        return body
    locals_ = feeds | {n for bound, _ in parsed for n in bound}
    returned = set(returned_names) & locals_
    last: dict[str, int] = {}
    viewed: set[str] = set()  # read by a statement that may pass it through or view it
    for i, (bound, read) in enumerate(parsed):
        makes_new = bool(bound) and all(b in fresh for b in bound)
        for n in read:
            if n in locals_:
                last[n] = i
                if not makes_new:
                    viewed.add(n)
    pad = " " * indent
    out: list[str] = []
    for i, (stmt, (bound, read)) in enumerate(zip(body, parsed, strict=True)):
        target = bound[0] if len(bound) == 1 else None
        forms = reuse[target].forms if target in reuse else {}
        for operand, form in forms.items():
            if (operand in fresh and operand not in viewed and operand not in feeds
                    and operand not in returned and last.get(operand) == i
                    and read.count(operand) == 1):
                stmt = form
                break
        out.append(stmt)
        dead = [n for n in dict.fromkeys(read) if n in locals_ and last[n] == i
                and n not in feeds and n not in returned]
        dead += [n for n in bound if n not in last and n not in returned and n != "_"]
        if dead:
            out.append(f"{pad}del {', '.join(dead)}")
    return out


__all__ = ["Reuse", "plan"]
