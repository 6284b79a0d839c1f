"""`tms execute --local` (the python runner, in process) on a table on each object store (S3 on the moto server,
Azure Blob storage on Azurite, both on loopback): compaction and clean complete, the cleaned objects are gone;
a clustering replaces every file group and the rollback of a crashed write removes its objects; `tms verify`
finds nothing, and TMS's reader and hudi-rs read exactly the model's rows."""
from __future__ import annotations

import pytest
from execute_support import (
    ModelledTable,
    plan_clean_of_old_versions,
    plan_clustering,
    plan_compaction,
    plan_rollback_of_write,
    rec,
    write_history,
)
from typer.testing import CliRunner

from tms.cli import app


def _tms(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.slow  # ~60 s a store: every request goes through the endpoint
def test_compaction_then_clean_on_an_object_store_with_the_python_runner(store_base, store_endpoint):
    t = ModelledTable(f"{store_base}/t", "MERGE_ON_READ", 8)
    write_history(t)

    compaction = plan_compaction(t.table())
    _tms("execute", t.path, "--instant", compaction, "--local")
    assert t.table().timeline.get(compaction).is_completed
    t.check()

    clean, doomed = plan_clean_of_old_versions(t.table())
    assert doomed, "the compaction left old file slices"
    _tms("execute", t.path, "--instant", clean, "--local")
    assert t.table().timeline.get(clean).is_completed
    prefix = store_endpoint.key(t.path)
    keys = set(store_endpoint.keys(prefix))
    assert keys and not {f"{prefix}/{rel}" for rel in doomed} & keys, "the cleaned files are gone"
    assert "ok: no differences" in _tms("verify", t.path)
    t.check()


@pytest.mark.slow  # ~60 s a store: every request goes through the endpoint
def test_clustering_and_the_rollback_of_a_crashed_write_on_an_object_store(store_base, store_endpoint):
    t = ModelledTable(f"{store_base}/t", "MERGE_ON_READ", 8)
    write_history(t)
    before = {fs.file_id for fs in t.table().file_system_view().latest_slices()}

    clustering = plan_clustering(t.table())
    _tms("execute", t.path, "--instant", clustering, "--local")
    done = t.table().timeline.get(clustering)
    assert done.is_completed and done.action == "replacecommit"
    after = {fs.file_id for fs in t.table().file_system_view().latest_slices()}
    assert after and not after & before, "every file group was replaced"
    t.check()

    crashed = t.write([rec(i, 99, "crashed") for i in range(0, 40, 3)], leave_inflight=True)
    inflight = t.table().timeline
    written = [s.path for s in inflight.commit_metadata(inflight.get(crashed)).write_stats()]
    assert written, "the crashed write left files"
    rollback = plan_rollback_of_write(t.table(), crashed)
    _tms("execute", t.path, "--instant", rollback, "--local")
    table = t.table()
    assert table.timeline.get(rollback).is_completed and not table.timeline.states_of(crashed)
    prefix = store_endpoint.key(t.path)
    keys = set(store_endpoint.keys(prefix))
    left = {f"{prefix}/{rel}" for rel in written} & keys
    assert not left, f"the crashed write's objects are gone: {sorted(left)}"
    assert "ok: no differences" in _tms("verify", t.path)
    t.check()
