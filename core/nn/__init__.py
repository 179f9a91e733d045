"""pyrite.nn (see DESIGN.md)."""
