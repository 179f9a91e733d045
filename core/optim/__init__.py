"""pyrite.optim (see DESIGN.md)."""
