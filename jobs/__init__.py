"""TMS jobs role (see DESIGN.md)."""
