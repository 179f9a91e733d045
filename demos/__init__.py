"""pyrite.demos (see DESIGN.md)."""
