"""Apache Hudi table-format library: table config, timeline, file-system view, serde, log blocks, merge."""
