"""Execution of table-service plans: compaction, clustering, clean and rollback.

Each action has an executor (`action.ActionExecutor`) that starts the instant on the driver, hands out one
picklable task per unit of work (a file group, a clustering group, a partition to clean, a rollback
request), and completes the instant from the tasks' results. Tasks are plain Python on pyarrow: a `Runner`
runs them in this process (`runner.LocalRunner`) or as Spark tasks (`jobs.spark_runner.SparkRunner`).
`dispatch.execute_instant` runs one pending instant end to end; `retry.prepare_retry` rolls back a failed
compaction or clustering attempt so its plan can run again; `cli.register` adds `tms execute`."""
