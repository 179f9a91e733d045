"""pyrite.wasm (see DESIGN.md)."""
