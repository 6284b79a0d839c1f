"""`tms engines ...` against a live service: register engines, set a rollout rule with a canary, list both,
and the service's refusals as one line."""
from __future__ import annotations

from test_ops_cli import as_json, ok, one_line_error


def _code(tmp_path, version: str) -> str:
    (tmp_path / version / "jobs").mkdir(parents=True)
    (tmp_path / version / "jobs" / "run.py").write_text("")
    return str(tmp_path / version)


def test_engines_and_rollout_commands(tms, tmp_path):
    created = as_json(tms("engines", "set", "v1", "--code-version", "1.0", "--code-path", _code(tmp_path, "v1"),
                          "--pyspark-version", "3.5.3", "--spark-conf", "spark.sql.shuffle.partitions=4", "--json"))
    assert (created["code_version"], created["spark_conf"]) == ("1.0", {"spark.sql.shuffle.partitions": "4"})
    assert ok(tms("engines", "set", "v2", "--code-version", "2.0", "--code-path", _code(tmp_path, "v2"))) == \
        f"engine v2: code 2.0 at {tmp_path / 'v2'}\n"
    listed = ok(tms("engines", "list"))
    assert "v1" in listed and "3.5.3" in listed and "(worker's)" in listed
    assert "code version" in ok(tms("engines", "show", "v2"))
    refused = one_line_error(tms("engines", "set", "v3", "--code-version", "3.0", "--code-path", "/nonexistent"))
    assert refused.startswith("error: no job code at /nonexistent")
    assert "needs the admin role" in one_line_error(tms("engines", "set", "v3", "--code-version", "3.0",
                                                        role="operator"))

    assert ok(tms("engines", "rollout", "upgrade", "--queue", "local", "--stable", "v1", "--canary", "v2",
                  "--percent", "20", "--min-tasks", "3")) == "rollout upgrade (queue local): v1, 20% on v2\n"
    [rule] = as_json(tms("engines", "rollouts", "--json"))
    assert (rule["canary_percent"], rule["min_tasks"], rule["state"]) == (20, 3, "active")
    assert "v2 20% (failed 0/0)" in ok(tms("engines", "rollouts"))
    assert one_line_error(tms("engines", "rollout", "x", "--stable", "v9")) == \
        "error: stable_engine: no engine named 'v9'"
    assert "used by rollout(s) upgrade" in one_line_error(tms("engines", "delete", "v2"))
    assert ok(tms("engines", "rollout-delete", "upgrade")) == "rollout upgrade deleted\n"
    assert ok(tms("engines", "delete", "v2")) == "engine v2 deleted\n"
    assert [e["name"] for e in as_json(tms("engines", "list", "--json"))] == ["v1"]
