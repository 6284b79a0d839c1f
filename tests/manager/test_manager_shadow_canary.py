"""Shadow canaries, run for real: a rollout rule running its canary engine in shadow on every compaction of a
queue, with python jobs on a worker and a leading manager in threads. A canary whose job code is the stable's
agrees on every file group and the rule stays active; a canary whose job code changes one value of what it
writes differs, and the rule is rolled back with an alert naming that record's key. Only the stable engine's
result is ever committed: every table reads back as its model, with the stable engine's job code."""
from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest
from worker_support import ModelledTable, final_attempt, plan, register, task, task_story, wait_for, write_history

from tms.db import AlertRepo, RolloutRepo, ShadowRunRepo, TaskState
from tms.hudi.table.hudi_table import HudiTable

JOBS = Path(__file__).resolve().parents[2] / "jobs"
# Job code v3: the stable's job, then one value of the first file it wrote changed (a wrong result, exit 0).
TAMPERING_JOB = '''"""v3: the job, writing one wrong value."""
import sys

import pyarrow.compute as pc
import pyarrow.parquet as pq

from jobs.run import parse_args, run_plan
from tms.execute.runner import LocalRunner
from tms.hudi.table.hudi_table import HudiTable


def main(argv=None):
    args = parse_args(argv)
    status = run_plan(args, LocalRunner())
    table = HudiTable.load(args.table)
    [done] = [i for i in table.timeline.completed() if i.timestamp == args.instant]
    stats = [s for ss in table.timeline.commit_metadata(done).partition_to_write_stats.values() for s in ss]
    path = table.storage.full(sorted(s.path for s in stats)[0])
    rows = pq.read_table(path)
    seqno = rows.schema.get_field_index("_hoodie_commit_seqno")
    values = rows.column(seqno).to_pylist()
    values[0] = "tampered"
    pq.write_table(rows.set_column(seqno, rows.schema.field(seqno), [values]), path)
    return status


if __name__ == "__main__":
    sys.exit(main())
'''


def job_code(root: Path, version: str, *, tampering: bool = False) -> Path:
    code = root / version
    shutil.copytree(JOBS, code / "jobs", ignore=shutil.ignore_patterns("__pycache__"))
    run = code / "jobs" / "run.py"
    run.write_text(run.read_text().replace("result_line(result)", f"result_line(result, job_code={version!r})"))
    if tampering:
        (code / "jobs" / "python_job.py").write_text(TAMPERING_JOB)
    return code


def put(service, path: str, body: dict) -> httpx.Response:
    return httpx.put(f"{service.url}/api/v1{path}", headers=service.admin, json=body, timeout=30)


def get(service, path: str) -> httpx.Response:
    return httpx.get(f"{service.url}/api/v1{path}", headers=service.admin, timeout=30)


def compactions(service, db, root: Path, names: list[str]) -> tuple[list[ModelledTable], list[int]]:
    tables, task_ids = [], []
    for name in names:
        t = ModelledTable(root / name, "MERGE_ON_READ", 6)
        table_id = register(service, t.path, **{"hoodie.compact.inline.max.delta.commits": 1})
        write_history(t)
        tables.append(t)
        task_ids += plan(db, table_id, "compaction")
    return tables, task_ids


@pytest.mark.slow
def test_a_shadow_canary_that_agrees_stays_and_one_that_differs_is_rolled_back_naming_the_key(
        tmp_path, service, db, local_queue, start_worker, start_manager, receiver):
    local_queue()
    for version, tampering in (("v1", False), ("v2", False), ("v3", True)):
        response = put(service, f"/engines/{version}", {"code_version": version,
                                                        "code_path": str(job_code(tmp_path, version,
                                                                                  tampering=tampering))})
        assert response.status_code == 200, response.text
    hook = httpx.post(f"{service.url}/api/v1/webhooks", headers=service.admin, timeout=10,
                      json={"url": receiver.url, "alert_types": ["canary_rolled_back"]})
    assert hook.status_code == 201, hook.text
    # A shadow rule needs a canary share.
    refused = put(service, "/rollouts/bad", {"queue": "local", "stable_engine": "v1", "shadow": True})
    assert refused.status_code == 422 and "shadow needs a canary_engine" in refused.text

    response = put(service, "/rollouts/shadowed", {"queue": "local", "stable_engine": "v1", "canary_engine": "v2",
                                                   "canary_percent": 100, "shadow": True, "min_tasks": 1})
    assert response.status_code == 200, response.text
    assert response.json()["shadow"] is True and response.json()["shadow_results"] == {
        "finished": 0, "failed": 0, "differed": 0}
    shadow_root = tmp_path / "shadow"
    start_worker(worker_slots=2, worker_shadow_root=str(shadow_root))
    start_manager(manager_canary_seconds=0.3)

    # 1. v2 agrees: both tables' compactions commit v1's result, each compared file group by file group.
    tables, task_ids = compactions(service, db, tmp_path, ["a1", "a2"])
    assert len(task_ids) == 2
    wait_for(lambda: all(task(db, t).state == TaskState.SUCCEEDED for t in task_ids), timeout=120,
             what="the compactions", explain=lambda: task_story(db, task_ids))
    with db.transaction() as session:
        runs = ShadowRunRepo(session).list(rollout="shadowed")
        assert sorted({r.task_id for r in runs}) == sorted(task_ids)  # a LOST attempt may shadow again
        assert {(r.outcome, r.canary_engine, r.stable_engine) for r in runs} == {("agreed", "v2", "v1")}
        for run in runs:
            assert run.groups and all(g["stable"] == g["shadow"] and g["stable"]["rows"] > 0 for g in run.groups)
        assert RolloutRepo(session).get("shadowed").state == "active"
    for t, task_id in zip(tables, task_ids, strict=True):
        attempt = final_attempt(db, task_id)
        assert (attempt.engine, attempt.outcome, attempt.result["job_code"]) == ("v1", "SUCCEEDED", "v1")
        t.check()  # the committed result is stable's, and right
    assert not any(shadow_root.iterdir()), "agreeing scratch copies are removed"
    listed = get(service, "/rollouts/shadowed/shadow-runs").json()
    assert sorted({r["task_id"] for r in listed}) == sorted(task_ids) and {r["outcome"] for r in listed} == {"agreed"}

    # 2. v3 writes one wrong value: the rule is rolled back at its first difference, naming the key.
    response = put(service, "/rollouts/shadowed", {"queue": "local", "stable_engine": "v1", "canary_engine": "v3",
                                                   "canary_percent": 100, "shadow": True, "min_tasks": 5})
    assert response.status_code == 200, response.text
    tables, task_ids = compactions(service, db, tmp_path, ["b1"])
    [task_id] = task_ids
    wait_for(lambda: task(db, task_id).state == TaskState.SUCCEEDED, timeout=120, what="the compaction",
             explain=lambda: task_story(db, [task_id]))
    wait_for(lambda: get(service, "/rollouts/shadowed").json()["state"] == "rolled_back", timeout=30,
             what="the rollback of the shadow canary")
    attempt = final_attempt(db, task_id)
    assert (attempt.engine, attempt.outcome, attempt.result["job_code"]) == ("v1", "SUCCEEDED", "v1")
    tables[0].check()  # v3's wrong value never reached the table

    with db.transaction() as session:
        [differed] = [r for r in ShadowRunRepo(session).list(rollout="shadowed") if r.outcome == "differed"]
        rollout = RolloutRepo(session).get("shadowed")
        alerts, count = AlertRepo(session).find(kind="canary_rolled_back")
    kept = Path(differed.detail.split("scratch copy kept at ")[1].rstrip(")"))
    scratch = HudiTable.load(str(kept))
    tampered = [key for f in scratch.storage.listdir("") if f.is_dir and not f.name.startswith(".")
                for info in scratch.storage.listdir(f.path) if info.name.endswith(".parquet")
                for key, seqno in zip(*pq.read_table(scratch.storage.full(info.path),
                                                     columns=["_hoodie_record_key", "_hoodie_commit_seqno"])
                                      .to_pydict().values(), strict=True) if seqno == "tampered"]
    assert tampered == [differed.first_differing_key], "the run names the key whose row differs"
    assert "differs in _hoodie_commit_seqno" in differed.detail
    assert f"differed from stable v1 on task {task_id}" in rollout.rollback_reason
    assert differed.first_differing_key in rollout.rollback_reason
    assert count == 1 and alerts[0].details["first_differing_key"] == differed.first_differing_key
    wait_for(lambda: receiver.accepted, timeout=30, what="the alert's delivery")
    assert receiver.accepted[0].document["type"] == "canary_rolled_back"
