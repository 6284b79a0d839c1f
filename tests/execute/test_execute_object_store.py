"""`tms execute --local` (the python runner, in process) on a table on each object store (S3 on the moto server,
Azure Blob storage on Azurite, both on loopback): compaction and clean complete, the cleaned objects are gone,
`tms verify` finds nothing, and TMS's reader and hudi-rs read exactly the model's rows."""
from __future__ import annotations

import pytest
from execute_support import ModelledTable, plan_clean_of_old_versions, plan_compaction, write_history
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
