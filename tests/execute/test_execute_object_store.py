"""`tms execute --local` (the python runner, in process) on a table on S3 (the moto server on loopback):
compaction and clean complete, the cleaned objects are gone, and hudi-rs reads exactly the model's rows."""
from __future__ import annotations

import pytest
from execute_support import ModelledTable, plan_clean_of_old_versions, plan_compaction, write_history
from typer.testing import CliRunner

from tms.cli import app


def _execute(base_path: str, instant: str) -> None:
    result = CliRunner().invoke(app, ["execute", base_path, "--instant", instant, "--local"])
    assert result.exit_code == 0, result.output


@pytest.mark.slow  # ~60 s: every request goes through the moto server
def test_compaction_then_clean_on_s3_with_the_python_runner(s3_base, s3_endpoint):
    t = ModelledTable(f"{s3_base}/t", "MERGE_ON_READ", 8)
    write_history(t)

    compaction = plan_compaction(t.table())
    _execute(t.path, compaction)
    assert t.table().timeline.get(compaction).is_completed
    t.check()

    clean, doomed = plan_clean_of_old_versions(t.table())
    assert doomed, "the compaction left old file slices"
    _execute(t.path, clean)
    assert t.table().timeline.get(clean).is_completed
    prefix = t.path.split(f"{s3_endpoint.bucket}/", 1)[1]
    keys = set(s3_endpoint.keys(prefix))
    assert keys and not {f"{prefix}/{rel}" for rel in doomed} & keys, "the cleaned files are gone"
    t.check()
