"""Engines and rollout rules over the API: registration checked on disk (a missing spark-submit or job code is
a 422 and nothing is stored), rules naming registered engines only, per-engine results in the API and on
/metrics."""
from __future__ import annotations

import re

import pytest

from service.ui.session import CSRF_FIELD
from tms.db import EngineRepo, TaskRepo, TaskState


@pytest.fixture
def code(tmp_path):
    """code(version) -> a folder holding a jobs package (jobs/run.py)."""
    def make(version: str = "v1"):
        (tmp_path / version / "jobs").mkdir(parents=True)
        (tmp_path / version / "jobs" / "run.py").write_text("")
        return str(tmp_path / version)
    return make


def _spark(tmp_path, version: str) -> str:
    home = tmp_path / f"spark-{version}"
    (home / "bin").mkdir(parents=True)
    submit = home / "bin" / "spark-submit"
    submit.write_text("#!/bin/sh\n")
    submit.chmod(0o755)
    (home / "RELEASE").write_text(f"Spark {version} built for Hadoop 3.3.4\n")
    return str(home)


def test_an_engine_is_registered_with_its_spark_and_code_and_listed(client, tokens, code, tmp_path):
    admin, viewer = tokens["admin"], tokens["viewer"]
    home = _spark(tmp_path, "3.5.3")
    body = {"spark_home": home, "pyspark_version": "3.5.3", "code_version": "1.0", "code_path": code(),
            "spark_conf": {"spark.sql.shuffle.partitions": "4"}}
    created = client.put("/api/v1/engines/spark35", json=body, headers=admin)
    assert created.status_code == 200, created.text
    assert created.json()["code_path"].endswith("/v1")
    assert created.json()["results"] is None
    (listed,) = client.get("/api/v1/engines", headers=viewer).json()
    assert (listed["name"], listed["spark_home"], listed["spark_conf"]) == ("spark35", home,
                                                                            {"spark.sql.shuffle.partitions": "4"})
    assert client.get("/api/v1/engines/spark35", headers=viewer).json()["pyspark_version"] == "3.5.3"
    assert client.get("/api/v1/engines/nope", headers=viewer).status_code == 404
    assert client.put("/api/v1/engines/spark35", json={**body, "code_version": "1.1"},
                      headers=admin).json()["code_version"] == "1.1"


@pytest.mark.parametrize("change, says", [
    ({"code_path": "/nonexistent/jobs-code"}, "no job code at /nonexistent/jobs-code"),
    ({"spark_submit": "/nonexistent/bin/spark-submit"}, "spark_submit /nonexistent/bin/spark-submit is not an"),
    ({"spark_home": "/nonexistent/spark"}, "spark_home /nonexistent/spark has no bin/spark-submit"),
    ({"pyspark_version": "3.4.0"}, "pyspark_version 3.4.0 does not match the Spark 3.5.3"),
    ({"code_path": None}, "no code_path given and no TMS_ENGINE_CODE_DIR"),
])
def test_an_engine_that_cannot_run_is_refused_in_one_line_and_nothing_is_stored(client, tokens, code, tmp_path,
                                                                                  change, says):
    body = {"spark_home": _spark(tmp_path, "3.5.3"), "code_version": "1.0", "code_path": code(), **change}
    refused = client.put("/api/v1/engines/bad", json=body, headers=tokens["admin"])
    assert refused.status_code == 422 and says in refused.json()["detail"], refused.text
    assert "\n" not in refused.json()["detail"]
    assert client.get("/api/v1/engines", headers=tokens["viewer"]).json() == []


def test_rollout_rules_name_registered_engines_and_take_the_configured_defaults(client, tokens, code):
    admin = tokens["admin"]
    for name in ("v1", "v2"):
        assert client.put(f"/api/v1/engines/{name}", json={"code_version": name, "code_path": code(name)},
                          headers=admin).status_code == 200
    rule = {"queue": "local", "stable_engine": "v1", "canary_engine": "v2", "canary_percent": 20}
    for bad, says in (({"canary_engine": "v9"}, "canary_engine: no engine named 'v9'"),
                      ({"canary_engine": "v1"}, "canary_engine must differ from stable_engine"),
                      ({"canary_engine": None}, "canary_percent needs a canary_engine"),
                      ({"canary_percent": 101}, "body.canary_percent")):
        refused = client.put("/api/v1/rollouts/upgrade", json={**rule, **bad}, headers=admin)
        assert refused.status_code == 422 and says in refused.json()["detail"], refused.text
    assert client.get("/api/v1/rollouts", headers=admin).json() == []
    created = client.put("/api/v1/rollouts/upgrade", json=rule, headers=admin)
    assert created.status_code == 200, created.text
    got = created.json()
    assert (got["queue"], got["table"], got["state"], got["failure_margin"], got["min_tasks"]) == \
        ("local", None, "active", 0.2, 5)
    in_use = client.delete("/api/v1/engines/v2", headers=admin)
    assert in_use.status_code == 409 and "used by rollout(s) upgrade" in in_use.json()["detail"]
    assert client.delete("/api/v1/rollouts/upgrade", headers=admin).status_code == 204
    assert client.delete("/api/v1/engines/v2", headers=admin).status_code == 204
    assert client.get("/api/v1/rollouts/upgrade", headers=admin).status_code == 404


def test_each_engines_success_rate_and_durations_show_in_the_api_and_metrics(client, app, tokens, code, register):
    admin = tokens["admin"]
    for name in ("v1", "v2"):
        client.put(f"/api/v1/engines/{name}", json={"code_version": name, "code_path": code(name)}, headers=admin)
    client.put("/api/v1/rollouts/all", json={"stable_engine": "v1", "canary_engine": "v2", "canary_percent": 50},
               headers=admin)
    table = register("cow_v6_nonpartitioned")
    outcomes = [("v1", True), ("v1", True), ("v1", False), ("v2", False)]
    with app.state.database.transaction() as session:
        tasks = TaskRepo(session)
        for n, (engine, succeeded) in enumerate(outcomes):
            tasks.create(table_id=table["id"], service="clean", instant=f"2024041817355{n}000",
                         state=TaskState.RUNNABLE)
            claimed = tasks.claim_next(owner="w", lease_seconds=60)
            EngineRepo(session).record_on_attempt(claimed.id, fencing_token=claimed.fencing_token, engine=engine,
                                                  rollout="all")
            tasks.finish(claimed.id, fencing_token=claimed.fencing_token, succeeded=succeeded)
    engines = {e["name"]: e["results"] for e in client.get("/api/v1/engines", headers=admin).json()}
    assert (engines["v1"]["finished"], engines["v1"]["failed"]) == (3, 1)
    assert engines["v1"]["success_rate"] == pytest.approx(2 / 3) and engines["v2"]["success_rate"] == 0.0
    assert engines["v1"]["p50_seconds"] is not None and engines["v1"]["p50_seconds"] >= 0
    rule = client.get("/api/v1/rollouts/all", headers=admin).json()
    assert rule["results"]["v2"] == {**rule["results"]["v2"], "finished": 1, "failed": 1}
    metrics = client.get("/metrics").text
    assert 'tms_engine_attempts{engine="v1",outcome="SUCCEEDED"} 2.0' in metrics
    assert 'tms_engine_success_ratio{engine="v2"} 0.0' in metrics
    assert 'tms_engine_attempt_duration_seconds_count{engine="v1"} 3.0' in metrics
    assert 'tms_rollout_canary_percent{canary_engine="v2",rollout="all",state="active"} 50.0' in metrics

    # The dashboard's engines page shows the same.
    client.cookies.clear()
    csrf = re.search(rf'name="{CSRF_FIELD}" value="([^"]+)"', client.get("/ui/login").text).group(1)
    token = tokens["viewer"]["Authorization"].removeprefix("Bearer ")
    client.post("/ui/login", data={CSRF_FIELD: csrf, "token": token}, follow_redirects=False)
    page = client.get("/ui/engines")
    assert page.status_code == 200
    rows = {m.group(1): m.group(2) for m in re.finditer(r'<tr data-engine="([^"]+)">(.*?)</tr>', page.text, re.S)}
    assert re.search(r'class="success">67% of 3<', rows["v1"]) and re.search(r'class="success">0% of 1<', rows["v2"])
    rule_row = re.search(r'<tr data-rollout="all">(.*?)</tr>', page.text, re.S).group(1)
    assert "every task" in rule_row and "v2: 50%" in rule_row and "active" in rule_row
    client.cookies.clear()



def test_a_shadow_rules_runs_show_in_the_api_and_on_the_engines_page(client, app, tokens, code, register):
    from tms.db import ShadowRunRepo

    admin = tokens["admin"]
    for name in ("v1", "v2"):
        client.put(f"/api/v1/engines/{name}", json={"code_version": name, "code_path": code(name)}, headers=admin)
    put = client.put("/api/v1/rollouts/mirror", headers=admin, json={
        "stable_engine": "v1", "canary_engine": "v2", "canary_percent": 10, "shadow": True})
    assert put.status_code == 200 and put.json()["shadow"] is True, put.text
    table = register("cow_v6_nonpartitioned")
    with app.state.database.transaction() as session:
        task, _ = TaskRepo(session).create(table_id=table["id"], service="compaction", instant="20240418173550000",
                                           state=TaskState.RUNNABLE)
        runs = ShadowRunRepo(session)
        runs.record(task_id=task.id, attempt=1, rollout="mirror", canary_engine="v2", stable_engine="v1",
                    outcome="agreed", groups=[{"group": "p/f1", "stable": {"rows": 3}, "shadow": {"rows": 3}}])
        runs.record(task_id=task.id, attempt=2, rollout="mirror", canary_engine="v2", stable_engine="v1",
                    outcome="differed", first_differing_key="k7", detail="file group p/f1: record key k7 differs in v")
    rule = client.get("/api/v1/rollouts/mirror", headers=admin).json()
    assert rule["shadow_results"] == {"finished": 2, "failed": 0, "differed": 1}
    listed = client.get("/api/v1/rollouts/mirror/shadow-runs", headers=tokens["viewer"]).json()
    assert [(r["attempt"], r["outcome"], r["first_differing_key"]) for r in listed] == [(2, "differed", "k7"),
                                                                                       (1, "agreed", None)]
    assert client.get("/api/v1/rollouts/nothing/shadow-runs", headers=tokens["viewer"]).status_code == 404

    client.cookies.clear()
    csrf = re.search(rf'name="{CSRF_FIELD}" value="([^"]+)"', client.get("/ui/login").text).group(1)
    token = tokens["viewer"]["Authorization"].removeprefix("Bearer ")
    client.post("/ui/login", data={CSRF_FIELD: csrf, "token": token}, follow_redirects=False)
    rule_row = re.search(r'<tr data-rollout="mirror">(.*?)</tr>', client.get("/ui/engines").text, re.S).group(1)
    assert "v2: 10% <span class=\"shadow\">in shadow</span>" in rule_row and "2 compared: 1 differed" in rule_row
    client.cookies.clear()


def test_a_hudi_engine_needs_hudis_bundle_and_has_no_job_code(client, tokens, tmp_path):
    admin = tokens["admin"]
    body = {"kind": "hudi", "spark_home": _spark(tmp_path, "3.5.3"), "code_version": "hudi-1.0.2"}
    refused = client.put("/api/v1/engines/hudi", json=body, headers=admin)
    assert refused.status_code == 422 and "Hudi's Spark bundle" in refused.text
    assert client.get("/api/v1/engines/hudi", headers=admin).status_code == 404
    created = client.put("/api/v1/engines/hudi", json={**body, "spark_conf": {"spark.jars": "/opt/hudi.jar"}},
                         headers=admin)
    assert created.status_code == 200, created.text
    assert (created.json()["kind"], created.json()["code_path"]) == ("hudi", "")
