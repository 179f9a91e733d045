"""The training text: docstrings of Python's standard library (PSF licence), gathered from the
running interpreter, and its character vocabulary.

`corpus()` imports a fixed, sorted list of pure-Python standard modules and walks their public
classes, functions and methods in sorted order, keeping each docstring once (cleaned with
`inspect.cleandoc`), ASCII printable characters and newlines only, cut at `SIZE` characters.
The same interpreter version always gives the same text; another version's docstrings differ
a little (the vocabulary of the shipped model is stored in its config, not re-derived).
Nothing is downloaded and nothing from elsewhere is copied into the repository.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import string
import warnings
from collections.abc import Iterator

#: the modules read, in this order (pure Python, importable everywhere, no side effects)
MODULES = (
    "abc", "argparse", "ast", "asyncio", "base64", "bdb", "bisect", "calendar", "cmd",
    "codecs", "collections", "concurrent.futures", "configparser", "contextlib", "copy",
    "csv", "dataclasses", "datetime", "decimal", "difflib", "dis", "doctest", "email",
    "email.message", "enum", "filecmp", "fileinput", "fnmatch", "fractions", "ftplib",
    "functools", "getopt", "gettext", "glob", "gzip", "hashlib", "heapq", "hmac", "html",
    "html.parser", "http.client", "http.cookiejar", "http.server", "imaplib", "inspect",
    "io", "ipaddress", "json", "locale", "logging", "logging.handlers", "lzma", "mailbox",
    "mimetypes", "multiprocessing", "netrc", "numbers", "operator", "optparse", "os",
    "pathlib", "pdb", "pickle", "pickletools", "pkgutil", "platform", "plistlib", "poplib",
    "posixpath", "pprint", "profile", "pstats", "queue", "quopri", "random", "re", "reprlib",
    "sched", "secrets", "selectors", "shlex", "shutil", "smtplib", "socket", "socketserver",
    "statistics", "string", "subprocess", "symtable", "tarfile", "tempfile", "textwrap",
    "threading", "timeit", "tokenize", "trace", "traceback", "types", "typing", "unittest",
    "urllib.parse", "urllib.request", "uuid", "warnings", "wave", "weakref", "xml.dom.minidom",
    "xml.etree.ElementTree", "zipfile", "zipimport",
    # and every submodule of these packages (sorted, tests left out)
    "code", "codeop", "colorsys", "compileall", "copyreg", "dbm", "graphlib", "importlib",
    "modulefinder", "pydoc", "py_compile", "pyclbr", "runpy", "shelve", "ssl", "sysconfig",
    "tabnanny", "tomllib", "tracemalloc", "wsgiref", "xml", "xmlrpc", "zipapp", "zoneinfo",
)
#: the corpus length in characters
SIZE = 900_000
#: the characters kept: ASCII printable (no tab, no carriage return) and the newline
ALLOWED = frozenset(c for c in string.printable if c not in "\t\r\x0b\x0c") | {"\n"}
#: the last tenth of the text is the validation split
VALID_FRACTION = 0.1


def _names() -> Iterator[str]:
    """MODULES, each package followed by its submodules (sorted; no tests, no __main__)."""
    seen: set[str] = set()
    for name in MODULES:
        for sub in (name, *_submodules(name)):
            if sub not in seen:
                seen.add(sub)
                yield sub


def _submodules(name: str) -> list[str]:
    module = importlib.import_module(name)
    path = getattr(module, "__path__", None)
    if path is None:
        return []
    found: list[str] = []
    for info in sorted(pkgutil.iter_modules(path), key=lambda info: info.name):
        if info.name.startswith(("_", "test")) or info.name in _SKIP:
            continue
        found.append(f"{name}.{info.name}")
        found.extend(_submodules(found[-1]) if info.ispkg else [])
    return found


#: submodules that warn, need a GUI or a platform's library when imported
_SKIP = frozenset({"windows_events", "windows_utils", "popen_spawn_win32", "reduction",
                   "mock_backend", "dumb", "gnu", "ndbm", "expatbuilder", "xmlbuilder"})


def _docstrings(name: str) -> Iterator[str]:
    module = importlib.import_module(name)
    yield module.__doc__ or ""
    for attr in sorted(vars(module)):
        if attr.startswith("_"):
            continue
        obj = vars(module)[attr]
        if getattr(obj, "__module__", None) != module.__name__:
            continue  # re-exported from elsewhere: read where it is defined
        if inspect.isclass(obj):
            yield obj.__doc__ or ""
            for member in sorted(vars(obj)):
                if member.startswith("_") and member != "__init__":
                    continue
                value = vars(obj)[member]
                if inspect.isfunction(value) or isinstance(value, (property, classmethod,
                                                                   staticmethod)):
                    yield getattr(value, "__doc__", None) or ""
        elif inspect.isfunction(obj):
            yield obj.__doc__ or ""


def _clean(doc: str) -> str:
    text = inspect.cleandoc(doc).replace("\t", "    ")
    return "".join(c for c in text if c in ALLOWED).strip()


def corpus(size: int = SIZE) -> str:
    """The first `size` characters of the docstrings, each followed by a blank line; a
    ValueError when the interpreter's docstrings are fewer (stripped with `python -OO`)."""
    seen: set[str] = set()
    parts: list[str] = []
    with warnings.catch_warnings():  # a few attributes warn when read (typing.io)
        warnings.simplefilter("ignore")
        for name in _names():
            for doc in _docstrings(name):
                text = _clean(doc)
                if len(text) < 16 or text in seen:
                    continue
                seen.add(text)
                parts.append(text + "\n\n")
    text = "".join(parts)
    if len(text) < size:
        raise ValueError(f"charlm corpus: the standard library's docstrings give {len(text)} "
                         f"characters, {size} wanted (is Python running with -OO?)")
    return text[:size]


def from_dataset(spec: str, size: int = SIZE, column: str = "text") -> str:
    """The text of a dataset's `column` (a Hugging Face dataset's train split, Parquet, SQLite:
    see `pyrite.dataset.sources`), row after row with a blank line between, cleaned as the
    docstrings are (characters outside `ALLOWED` dropped), cut at `size` characters."""
    from pyrite.dataset.sources import open_dataset
    from pyrite.errors import DatasetError

    rows = open_dataset(spec, "train")
    parts: list[str] = []
    total = 0
    for i in range(rows.len()):
        row = rows.get(i) or {}
        if column not in row:
            raise DatasetError(f"{spec}: the rows have no {column!r} column (they have "
                               f"{sorted(row)}); the charlm trains on a text column")
        value = row[column]
        if not isinstance(value, str):
            raise DatasetError(f"{spec}: column {column!r} holds {type(value).__name__}, "
                               "not text")
        text = "".join(c for c in value.replace("\t", "    ") if c in ALLOWED).strip()
        if text:
            parts.append(text + "\n\n")
            total += len(parts[-1])
            if total >= size:
                break
    text = "".join(parts)[:size]
    if len(text) < 1000:
        raise DatasetError(f"{spec}: its {column!r} column gives {len(text)} usable "
                           "characters; the charlm needs at least 1,000")
    return text


def split(text: str) -> tuple[str, str]:
    """(train, valid): the first 90 % and the last 10 % of the text."""
    cut = int(len(text) * (1 - VALID_FRACTION))
    return text[:cut], text[cut:]


def vocabulary(text: str) -> str:
    """The sorted distinct characters of `text`, as one string (index = token id)."""
    return "".join(sorted(set(text)))


__all__ = ["ALLOWED", "MODULES", "SIZE", "corpus", "from_dataset", "split", "vocabulary"]
