"""TMS core: configuration, database and the Hudi table-format library shared by every role."""
