"""The metadata table (MDT) of a Hudi table: its records, keys, state and writer."""
