"""pyrite.interop: reading and writing other frameworks' weight files.

`pyrite.interop.safetensors` reads and writes Hugging Face `.safetensors` files and
`pyrite.interop.pytorch` reads PyTorch `.pt`/`.pth` files (a restricted unpickler: tensors and
plain containers only), both in pure Python (no numpy, no torch), so they work in the browser
too. Importing this package reads no file and
imports nothing outside the standard library.
"""
