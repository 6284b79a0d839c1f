"""The planner role: `tms planner` (event-driven planning passes, the periodic trigger and the reconciliation
scan, each under the table's row lock) and `tms schedule`. The decisions and plans themselves are the
planning library's (`tms.planning`); this package adds the database, the table cache and the process."""
