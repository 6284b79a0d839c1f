"""Java Hudi on S3 in the loop: a Java writer (Hudi 1.1.1's Spark datasource through Hadoop's S3A connector, on
`s3a://` of the moto server) writes a MERGE_ON_READ table with the commit callback on and inline table services
off; TMS has the table registered as `s3://`, receives the callbacks (which name `s3a://`), plans the compaction
and runs it; then Java Hudi reads exactly the model's rows (snapshot and read-optimized) and TMS's `verify`
finds nothing.

The writer runs without a lock: Hudi's FileSystemBasedLockProvider is no lock on S3 (TMS refuses it there), and
a single writer needs none beside TMS's compaction of file slices it no longer writes to."""
from __future__ import annotations

import pytest
from hudi_java.harness import JavaWriter, writer_options
from test_worker_java_hudi import _events, row
from typer.testing import CliRunner
from worker_support import attempts, register, task, wait_for, wait_until_final

from tms.cli import app
from tms.db import TaskRepo, TaskState
from tms.hudi.table.hudi_table import HudiTable

pytestmark = [pytest.mark.slow, pytest.mark.beside]
NO_LOCK = ("hoodie.write.lock.", "hoodie.write.concurrency.", "hoodie.cleaner.policy.failed.writes")


def _compactions(db, table_id: int) -> list[int]:
    with db.transaction() as session:
        return [t.id for t in TaskRepo(session).find(table_id=table_id, service="compaction")[0]]


def test_java_writes_on_s3a_tms_compacts_java_reads(s3_endpoint, s3_base, service, db, local_queue, start_planner,
                                                   start_worker, java_hudi, monkeypatch):
    from s3_endpoint import ACCESS_KEY, REGION, SECRET_KEY
    settings = service.app.state.settings
    monkeypatch.setattr(settings, "storage_roots", [*settings.storage_roots, f"s3://{s3_endpoint.bucket}"])
    local_queue()
    driver = java_hudi(9, s3a=True)
    driver.set_hadoop_conf({"fs.s3a.endpoint": s3_endpoint.url, "fs.s3a.endpoint.region": REGION,
                            "fs.s3a.path.style.access": "true", "fs.s3a.connection.ssl.enabled": "false",
                            "fs.s3a.access.key": ACCESS_KEY, "fs.s3a.secret.key": SECRET_KEY})
    key = f"{s3_endpoint.key(s3_base)}/trips"
    options = {k: v for k, v in writer_options(service.callback_url, service.callback_key).items()
               if not k.startswith(NO_LOCK)}
    writer = JavaWriter(driver, f"s3a://{s3_endpoint.bucket}/{key}", "MERGE_ON_READ", options)

    # The table exists before it is registered: its first write has no one to tell.
    writer.options = {**options, "hoodie.write.commit.callback.on": "false"}
    writer.write("insert", [row(i, 1) for i in range(24)])
    writer.options = options
    table_uri = f"s3://{s3_endpoint.bucket}/{key}"
    assert HudiTable.load(table_uri).config.is_mor
    table_id = register(service, table_uri, **{"hoodie.compact.inline.max.delta.commits": 3})
    start_planner(planner_clean_commits=1000)

    writer.write("upsert", [row(i, 2, "u") for i in range(0, 24, 2)])
    writer.write("upsert", [row(i, 3, "v") for i in range(0, 24, 3)] + [row(i, 3, "new") for i in range(24, 27)])
    [compaction] = wait_for(lambda: _compactions(db, table_id), 90, "the planner to plan a compaction")
    planned = writer.expected()  # the third delta commit made it due: the compaction merges these rows
    assert _events(db, table_id) == [("deltacommit", "completed", "hudi_callback")] * 2, \
        "Hudi's callbacks, naming s3a://, reached the table registered as s3://"

    start_worker()
    done = wait_until_final(db, compaction, 240)
    assert done.state == TaskState.SUCCEEDED, f"{done.error}\n{attempts(db, compaction)[-1].log_tail}"
    assert HudiTable.load(table_uri).timeline.get(task(db, compaction).instant).is_completed

    assert writer.read("snapshot") == writer.expected(), "Java Hudi's snapshot read after TMS's compaction"
    assert writer.read("read_optimized") == planned, "Java Hudi reads TMS's compacted base files"
    verified = CliRunner().invoke(app, ["verify", table_uri])
    assert verified.exit_code == 0 and "ok: no differences" in verified.output, verified.output
