"""pyrite.webgpu (see DESIGN.md)."""
