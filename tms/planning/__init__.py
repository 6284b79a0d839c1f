"""The planning library: decides what compaction, clustering, clean or rollback a table needs and writes the
plan onto its timeline. Every function takes a loaded HudiTable (and a TablePolicy and `now`, a timezone-aware
datetime, where a decision depends on them) and returns what it planned; none needs the database (this package
never imports `tms.db`), and none plans a file group, a clean or a rollback twice. `digest` and `decisions`
decide when to plan from what the planner remembers of a table. The planner role (`planner/`) runs them for
every registered table.

Import from the modules (`tms.planning.compaction`, ...): this package's own import stays empty, so that what
needs only `tms.planning.policy` (the database layer, every role) does not load the format library with it."""
