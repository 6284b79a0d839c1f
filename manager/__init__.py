"""TMS manager role (see DESIGN.md)."""
