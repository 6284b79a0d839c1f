"""`--option key=value` on `tms write`, `tms schedule` and `tms execute`: the commands take the table's lock
(here ZooKeeper's, held meanwhile by a Curator-style client) and its concurrency mode, and refuse lock
options they cannot honour with one line, changing nothing."""
from __future__ import annotations

import json

from concurrency_support import OCC, check, create_table, rec, zk_options
from typer.testing import CliRunner

from tms.cli import app
from tms.hudi.table.hudi_table import HudiTable

runner = CliRunner()
ALLOW = "hoodie.clustering.updates.strategy=org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"


def tms(*args):
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _records(tmp_path, name, records):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _option_args(options: dict[str, str]) -> list[str]:
    return [arg for k, v in options.items() for arg in ("--option", f"{k}={v}")]


def test_write_schedule_and_execute_take_the_writers_zookeeper_lock(zookeeper, tmp_path):
    path = tmp_path / "t"
    model = create_table(path, "MERGE_ON_READ", 8)
    options = {**zk_options(zookeeper, "cli"), "hoodie.write.concurrency.mode": OCC,
               "hoodie.write.lock.wait_time_ms": "300", "hoodie.write.lock.client.num_retries": "0"}
    for i in range(1, 4):
        code, out, err = tms("write", path, "--records", _records(tmp_path, f"r{i}.jsonl", [rec(i * 10, 1)]),
                             "--op", "insert", *_option_args(options))
        assert (code, err) == (0, ""), err
        model.upsert([rec(i * 10, 1)])
    java = zookeeper.client()
    theirs = java.Lock("/hudi/locks/cli", "java-writer", extra_lock_patterns=["-lock-"])
    assert theirs.acquire(timeout=5)
    before = HudiTable.load(str(path)).timeline.instants()
    code, out, err = tms("schedule", path, "--service", "clustering",
                         "--option", "hoodie.clustering.async.max.commits=1", *_option_args(options))
    assert code == 1 and err.startswith("error: unable to acquire the table lock after 1 attempt(s): ZooKeeper lock")
    assert HudiTable.load(str(path)).timeline.instants() == before  # nothing planned without the lock
    theirs.release()
    code, out, err = tms("schedule", path, "--service", "clustering",
                         "--option", "hoodie.clustering.async.max.commits=1", *_option_args(options))
    assert code == 0, err
    planned = out.split()[0]
    # A writer updating a clustered file group (SparkAllowUpdateStrategy), committed before the clustering.
    code, out, err = tms("write", path, "--records", _records(tmp_path, "u.jsonl", [rec(20, 5, "update")]),
                         "--option", ALLOW, *_option_args(options))
    assert (code, err) == (0, ""), err
    model.upsert([rec(20, 5, "update")])
    code, out, err = tms("execute", path, "--instant", planned, "--local", *_option_args(options))
    assert code == 1 and err.startswith(f"error: conflict: clustering {planned} overlaps deltacommit")
    assert HudiTable.load(str(path)).timeline.get(planned) is None
    check(path, model)
    assert java.get_children("/hudi/locks/cli") == []  # every command released the lock
    java.stop()


def test_two_writers_under_occ_from_the_command_line(tmp_path):
    path = tmp_path / "t"
    model = create_table(path, "COPY_ON_WRITE", 8)
    options = _option_args({"hoodie.write.lock.provider":
                            "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
                            "hoodie.write.concurrency.mode": OCC})
    code, first, err = tms("write", path, "--records", _records(tmp_path, "a.jsonl", [rec(0, 3, "a")]),
                           "--leave-inflight", *options)
    assert code == 0, err
    code, out, err = tms("write", path, "--records", _records(tmp_path, "b.jsonl", [rec(0, 4, "b")]), *options)
    assert code == 0, err
    model.upsert([rec(0, 4, "b")])
    code, out, err = tms("write", path, "--complete", first.strip(), *options)
    assert code == 1 and err.startswith(f"error: conflict: commit {first.strip()} overlaps commit {out.strip()}")
    assert len(err.strip().splitlines()) == 1
    check(path, model)


def test_lock_options_tms_cannot_honour_are_refused_with_one_line_and_change_nothing(tmp_path):
    path = tmp_path / "t"
    model = create_table(path, "MERGE_ON_READ", 8)
    records = _records(tmp_path, "r.jsonl", [rec(0, 9)])
    for option, message in [
        ("hoodie.write.lock.provider=org.apache.hudi.client.transaction.lock.InProcessLockProvider",
         "is refused: it locks within one JVM"),
        ("hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL", "needs hoodie.write.lock.provider"),
        ("hoodie.clustering.updates.strategy=Whatever", "is not SparkAllowUpdateStrategy"),
        ("nokey", "is not hoodie.key=value"),
    ]:
        code, out, err = tms("write", path, "--records", records, "--option", option)
        assert code == 1 and message in err and len(err.strip().splitlines()) == 1, err
    code, out, err = tms("execute", path, "--instant", "20250101000000000", "--local",
                         "--option", "hoodie.compact.inline.max.delta.commits=1")
    assert code == 1 and "is not a lock option" in err
    code, out, err = tms("schedule", path, "--service", "clean", "--option",
                         "hoodie.write.lock.provider=org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider")
    assert code == 1 and "DynamoDB" in err
    check(path, model)
