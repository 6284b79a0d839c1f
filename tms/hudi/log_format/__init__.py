"""Hudi's file formats below the base files: log files and their blocks, rollback blocks, HFile."""
