"""pyrite.train (see DESIGN.md)."""
