"""Smaller Python sources for the page's wheel: docstrings emptied and comments dropped.

The browser wheel is part of every first visit, and about a third of pyrite's compressed source
is documentation for people reading it. `strip_source` removes it while keeping every line
where it was, so a traceback in the page still points at the right line of the installed
source. The sources on disk and in the native install are untouched. Nothing in the page reads
pyrite's own docstrings (`__doc__` is only read by the command-line tools, which pages never
run).
"""

from __future__ import annotations

import ast
import io
import tokenize

_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _docstring_spans(tree: ast.Module) -> list[tuple[int, int, int, int]]:
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, _DOCUMENTED) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                value = first.value
                assert value.end_lineno is not None and value.end_col_offset is not None
                spans.append((value.lineno, value.col_offset, value.end_lineno,
                              value.end_col_offset))
    return spans


def strip_source(source: str) -> str:
    """`source` with each docstring emptied (`\"\"\"\"\"\"`, keeping its line breaks) and each
    comment removed; the result has the same lines and parses to the same code.

    >>> strip_source('def f():\\n    \"\"\"Doc\\n    more.\"\"\"\\n    return 1  # one\\n')
    'def f():\\n    \"\"\"\\n\"\"\"\\n    return 1\\n'
    """
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    for row, col in sorted((t.start for t in tokens if t.type == tokenize.COMMENT),
                           reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:col].rstrip() + ("\n" if line.endswith("\n") else "")
    # ast columns are UTF-8 byte offsets; spans go last to first so earlier ones stay valid
    for first, start, last, end in sorted(_docstring_spans(tree), reverse=True):
        head = lines[first - 1].encode()[:start].decode()
        tail = lines[last - 1].encode()[end:].decode()
        empty = '"""' + "\n" * (last - first) + '"""'
        lines[first - 1:last] = (head + empty + tail).splitlines(keepends=True)
    stripped = "".join(lines)
    if stripped.count("\n") != source.count("\n"):
        raise ValueError("stripping moved lines")
    ast.parse(stripped)
    return stripped


__all__ = ["strip_source"]
