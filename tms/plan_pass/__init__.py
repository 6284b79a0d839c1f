"""The planning pass, shared by the roles that plan: the planner (events, periodic trigger, reconciliation
scan) and the service (an operator's `POST /api/v1/tables/{id}:plan`). A pass runs on one table under its
planning lock (`locked_for_planning`): it settles the plans TMS can no longer run, adopts plans that have no
task, plans what is due (or asked for) if TMS can run it, and records a task per plan."""
