"""Canary rollout, run for real: two job-code versions registered as engines (v1 a copy of the jobs package,
v2 a copy whose job exits 1), a rollout rule sending 20% of a queue's tasks to v2, python jobs on a worker and
a leading manager in threads, the alert delivered to a real HTTP receiver."""
from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest
from worker_support import ModelledTable, attempts, plan, register, task, task_story, wait_for, write_history

from tms.db import AlertRepo, RolloutRepo, TaskState
from worker.engine_choice import in_canary

JOBS = Path(__file__).resolve().parents[2] / "jobs"
BROKEN_JOB = '''"""v2: a job version that cannot run anything."""
import sys


def main(argv=None):
    print("error: job code v2 is broken")
    return 1


if __name__ == "__main__":
    sys.exit(main())
'''


def job_code(root: Path, version: str, *, broken: bool = False) -> Path:
    """A copy of the jobs package as job code `version` (its result record says which version it is)."""
    code = root / version
    shutil.copytree(JOBS, code / "jobs", ignore=shutil.ignore_patterns("__pycache__"))
    if broken:
        (code / "jobs" / "python_job.py").write_text(BROKEN_JOB)
    else:
        run = code / "jobs" / "run.py"
        run.write_text(run.read_text().replace("result_line(result)", f"result_line(result, job_code={version!r})"))
    return code


def put(service, path: str, body: dict) -> httpx.Response:
    return httpx.put(f"{service.url}/api/v1{path}", headers=service.admin, json=body, timeout=30)


@pytest.mark.waiting
@pytest.mark.beside
def test_a_failing_canary_on_20_percent_of_a_queue_is_rolled_back_and_every_task_succeeds_on_stable(
        tmp_path, service, db, local_queue, start_worker, start_manager, receiver):
    local_queue()
    for version, broken in (("v1", False), ("v2", True)):
        response = put(service, f"/engines/{version}", {"code_version": version,
                                                        "code_path": str(job_code(tmp_path, version, broken=broken))})
        assert response.status_code == 200, response.text
    hook = httpx.post(f"{service.url}/api/v1/webhooks", headers=service.admin, timeout=10,
                      json={"url": receiver.url, "alert_types": ["canary_rolled_back"]})
    assert hook.status_code == 201, hook.text
    task_ids = []
    for n in range(10):
        t = ModelledTable(tmp_path / f"t{n}", "MERGE_ON_READ", 6)
        table_id = register(service, t.path, **{"hoodie.compact.inline.max.delta.commits": 1})
        write_history(t)
        task_ids += plan(db, table_id, "compaction")
    assert len(task_ids) == 10
    # The share is a hash of the rule and the task id: name the rule so that 2 of the 10 tasks are canaries.
    rule = next(f"upgrade-{i}" for i in range(1000)
                if sum(in_canary(f"upgrade-{i}", t, 20) for t in task_ids) == 2)
    canaries = {t for t in task_ids if in_canary(rule, t, 20)}
    response = put(service, f"/rollouts/{rule}", {"queue": "local", "stable_engine": "v1", "canary_engine": "v2",
                                                  "canary_percent": 20, "min_tasks": 2, "failure_margin": 0.2})
    assert response.status_code == 200, response.text
    assert response.json()["state"] == "active"

    start_worker(worker_slots=2, retry_backoff_seconds=1.0, retry_max_attempts=3)
    start_manager(manager_canary_seconds=0.3)
    wait_for(lambda: all(task(db, t).state == TaskState.SUCCEEDED for t in task_ids), timeout=480,
             what="every task to succeed", explain=lambda: task_story(db, task_ids))

    with db.transaction() as session:
        rollout = RolloutRepo(session).get(rule)
        assert rollout.state == "rolled_back"
        assert "canary v2 failed 2 of 2" in rollout.rollback_reason
        rolled_back_at = rollout.rolled_back_at
        alerts, count = AlertRepo(session).find(kind="canary_rolled_back")
        assert count == 1 and alerts[0].subject == f"rollout:{rule}" and alerts[0].state == "firing"
    for t in task_ids:
        tried = attempts(db, t)
        assert tried[-1].engine == "v1" and tried[-1].outcome == "SUCCEEDED" and tried[-1].rollout == rule
        assert tried[-1].result["job_code"] == "v1", "the stable engine's own job code ran"
        on_canary = [a for a in tried if a.engine == "v2"]
        if t in canaries:  # one try on the canary, its retry on stable
            assert [a.outcome for a in on_canary] == ["FAILED"], [(a.engine, a.outcome) for a in tried]
            assert "job code v2 is broken" in on_canary[0].error
            assert on_canary[0].started_at < rolled_back_at
        else:
            assert on_canary == [] and len(tried) == 1
    wait_for(lambda: receiver.accepted, timeout=30, what="the alert's delivery")
    [delivered] = receiver.accepted
    assert delivered.document["type"] == "canary_rolled_back" and delivered.document["subject"] == f"rollout:{rule}"

    # The API shows the rule rolled back and each engine's results.
    listed = httpx.get(f"{service.url}/api/v1/rollouts/{rule}", headers=service.admin, timeout=10).json()
    assert listed["state"] == "rolled_back"
    assert listed["results"]["v2"]["failed"] == 2 and listed["results"]["v1"]["failed"] == 0
    assert listed["results"]["v1"]["finished"] == 10
    engines = {e["name"]: e for e in httpx.get(f"{service.url}/api/v1/engines", headers=service.admin,
                                                timeout=10).json()}
    assert engines["v1"]["results"]["success_rate"] == 1.0 and engines["v2"]["results"]["success_rate"] == 0.0

    # Put again, the rule starts afresh and the alert resolves.
    response = put(service, f"/rollouts/{rule}", {"queue": "local", "stable_engine": "v1", "canary_engine": "v2",
                                                  "canary_percent": 20, "min_tasks": 2})
    assert response.json()["state"] == "active" and response.json()["results"] == {}
    with db.transaction() as session:
        assert AlertRepo(session).find(kind="canary_rolled_back", state="firing")[1] == 0
