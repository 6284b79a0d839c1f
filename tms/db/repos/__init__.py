"""Repositories: the queries and compare-and-set updates of each kind of row.

Each takes a `Session` and never commits: the caller owns the transaction (`Database.transaction()`)."""
