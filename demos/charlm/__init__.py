"""A character-level language model: a small decoder-only transformer trained on the standard
library's docstrings; `pyrite train charlm`, `pyrite generate charlm`, and a page. See
docs/charlm.md."""
