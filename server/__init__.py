"""pyrite.server (see DESIGN.md)."""
