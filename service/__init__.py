"""TMS service role (see DESIGN.md)."""
