"""`tms up`: every role on one machine with embedded defaults (service and embedded PostgreSQL, planner,
worker), a demo table and its writer."""
