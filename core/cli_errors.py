"""The one error path of every `pyrite` command: a mistake is one line, never a traceback.

`Parser` is the commands' ArgumentParser (subcommands inherit it): a bad argument is
`pyrite infer mnist: error: argument --index: must be an integer in [0, 9999], got '99999'; see
pyrite infer mnist --help` and exit status 2. `run_command(parser, argv)` parses and runs the
chosen command's `run`; pyrite's own errors and the OS errors a user causes (a missing file, a
folder without permission, a full disk, a port in use) become
`pyrite <command>: error: <what is wrong>; <what to do>` on stderr and exit status 2. An
error pyrite did not expect is one line too, exit status 1, asking for a report. `--debug`
anywhere on the command line, or PYRITE_DEBUG=1, prints the traceback as well.
"""

from __future__ import annotations

import argparse
import errno
import sys
import traceback
from typing import NoReturn

from . import config
from .errors import PyriteError

DEBUG_FLAG = "--debug"
DEBUG_HELP = "on an error, print the Python traceback too (also PYRITE_DEBUG=1)"


class Parser(argparse.ArgumentParser):
    """argparse, with a mistake reported in one line (no usage block) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; see {self.prog} --help\n")


def describe(exc: BaseException) -> tuple[str, int]:
    """The one-line message for an error and the exit status: 2 for a user's mistake (pyrite's
    own errors, missing files, permissions, ...), 1 for an error pyrite did not expect."""
    if isinstance(exc, PyriteError):
        return _one_line(str(exc)), 2
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        fix = {
            errno.ENOENT: "no such file or folder; check the path",
            errno.EACCES: "permission denied; choose a path you may use, or change its "
                          "permissions",
            errno.EPERM: "operation not permitted; choose a path you may use",
            errno.EISDIR: "is a folder; give a file",
            errno.ENOTDIR: "a part of the path is a file, not a folder; check the path",
            errno.ENOSPC: "no space left on the device; free some space and run again",
            errno.EROFS: "the file system is read-only; choose a writable path",
            errno.EADDRINUSE: "the address is in use; pick another port (--port 0 picks a "
                              "free one) or stop the program using it",
            errno.ENAMETOOLONG: "the file name is too long; choose a shorter one",
        }.get(exc.errno if exc.errno is not None else -1)
        if fix is not None:
            return f"{where}{fix}", 2
    if isinstance(exc, MemoryError):
        return ("out of memory; try a smaller input, batch or model, or close other "
                "programs"), 2
    if isinstance(exc, ModuleNotFoundError):
        return f"{_one_line(str(exc))}; install it and run again", 2
    return (f"unexpected {type(exc).__name__}: {_one_line(str(exc))}; this is a pyrite bug: "
            f"run again with {DEBUG_FLAG} and report the traceback"), 1


def _one_line(text: str) -> str:
    """A message on one line: its lines joined with '; ', or with a space after a line that
    ends in punctuation already (a heading's ':', a sentence's '.'), so a list introduced by
    "nothing was run:" reads "nothing was run: node a; node b", not "run:; node a".

    >>> _one_line("first\\n  second\\n")
    'first; second'
    >>> _one_line("2 problems; nothing was run:\\n  a\\n  b")
    '2 problems; nothing was run: a; b'
    """
    out = ""
    for line in (line.strip() for line in text.splitlines()):
        if not line:
            continue
        out += line if not out else (" " if out.endswith(_ENDS) else "; ") + line
    return out


#: punctuation that already ends a line's thought: what follows it needs no '; '
_ENDS = (":", ";", ",", ".", "!", "?")


def _command(prog: str, args: argparse.Namespace) -> str:
    """`pyrite infer mnist`: the program and the (sub)commands chosen."""
    words = [prog, getattr(args, "command", None), getattr(args, "task", None)]
    return " ".join(w for w in words if w)


def debugging(argv: list[str]) -> bool:
    """Whether tracebacks are wanted: --debug on the command line or PYRITE_DEBUG=1."""
    return DEBUG_FLAG in argv or config.debug_traceback()


def run_command(parser: argparse.ArgumentParser, argv: list[str] | None = None) -> int:
    """Parse `argv` (default sys.argv[1:]) and run the command's `run(args)`; its errors are one
    line on stderr (the traceback too when debugging), and the exit status is returned."""
    given = list(sys.argv[1:] if argv is None else argv)
    debug = debugging(given)
    args, unknown = parser.parse_known_args([a for a in given if a != DEBUG_FLAG])
    command = _command(parser.prog, args)
    if unknown:  # named by the (sub)command that was chosen, not by the top parser
        print(f"{command}: error: unrecognized arguments: {' '.join(unknown)}; see {command} "
              "--help", file=sys.stderr)
        return 2
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - every error becomes one line, by design
        if debug:
            traceback.print_exc()
        message, status = describe(exc)
        print(f"{command}: error: {message}", file=sys.stderr, flush=True)
        return status


__all__ = ["DEBUG_FLAG", "DEBUG_HELP", "Parser", "debugging", "describe", "run_command"]
