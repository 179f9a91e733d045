"""pyrite.module (see DESIGN.md)."""
