"""The worker role (`tms worker`): claims runnable tasks, picks a resource queue, sizes the job from the plan,
submits it with spark-submit, renews the task's lease while it runs, and records how it ended.

- loop.Worker: the process's loop (slots, heartbeat, claims, a supervisor thread per job)
- claim.claim_next: one claim (queue rows locked, SKIP LOCKED task rows, new fencing token and fence key)
- queues.choose_queue / admits: which queue a task may and should use
- sizing.size_job: executor memory and count from the plan's statistics
- supervisor.JobSupervisor: one job from launch to outcome (retry rollback, lease, cancel, timeout)
- job_process.JobProcess, commands: the job's process group and command line
- fence: the fence key and URL a job's driver checks its lease with
- python_job: the job without Spark (TMS_WORKER_RUNNER=python)
"""
