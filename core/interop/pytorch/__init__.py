"""PyTorch `.pt`/`.pth` weight files, read in pure Python without torch (and without numpy).

Both of torch's formats are read:

- the zip format (`torch.save` since 1.6): a zip holding `<prefix>/data.pkl`, a pickle of the
  saved object, and `<prefix>/data/<key>`, the raw bytes of each storage (little-endian unless
  `<prefix>/byteorder` says "big");
- the legacy format (`_use_new_zipfile_serialization=False`): pickles of the magic number, the
  protocol version and system info, then the object's pickle, a pickled list of storage keys and
  each storage as an 8-byte element count followed by its bytes.

The pickle is read by a restricted unpickler: it rebuilds tensors (`torch._utils._rebuild_tensor`,
`_rebuild_tensor_v2`, `_rebuild_parameter`, typed storages such as `torch.FloatStorage`) and plain
containers (dict, `collections.OrderedDict`, list, tuple, set, str, numbers); any other global,
such as `os.system` in a malicious file, is refused with a `RecordError` naming it, before
anything is called. Every size is checked against the bytes the file really holds before memory
is allocated, so a file declaring a tensor of 10^12 elements is refused.

Dtypes: float64/32/16, int64/32/16/8, uint8 and bool map to pyrite's dtypes of the same name;
bfloat16 is read as f32 (exactly). Tensors with any strides (a saved transposed view) come back
contiguous, in row-major order.

>>> from pyrite.errors import RecordError
>>> try:
...     loads(b"c" + b"os\\nsystem\\n(S'echo hi'\\ntR.", source="evil.pt")
... except RecordError as err:
...     print(err)  # doctest: +NORMALIZE_WHITESPACE
evil.pt: refused to load the global 'os.system': a PyTorch weight file may only hold tensors
and plain containers (nothing was executed)
"""

from .loader import TOP_KEYS, load, load_into, loads
from .names import contiguous_indices, remap_keys
from .recorder import PyTorchFileRecorder
from .storage import MAX_EXPANDED

__all__ = ["MAX_EXPANDED", "TOP_KEYS", "PyTorchFileRecorder", "contiguous_indices", "load",
           "load_into", "loads", "remap_keys"]
