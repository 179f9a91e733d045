"""pyrite.interop: reading and writing other frameworks' weight files.

`pyrite.interop.safetensors` reads and writes Hugging Face `.safetensors` files in pure Python
(no numpy, no torch), so it works in the browser too. Importing this package reads no file and
imports nothing outside the standard library.
"""
