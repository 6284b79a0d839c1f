"""A table: its properties and configuration, writes, savepoints, verification and description."""
