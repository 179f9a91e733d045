"""pyrite.shaders (see DESIGN.md)."""
