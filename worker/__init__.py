"""TMS worker role (see DESIGN.md)."""
