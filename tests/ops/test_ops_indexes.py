"""`tms indexes list|build|drop` against a live service: what each prints, with `--json` too, and refusals as one
line. The build's task is run as the Python job runs it (no worker here)."""
from __future__ import annotations

import os

from mdt_model import MdtModelledTable, check_metadata_table
from table_model import rec
from test_ops_cli import as_json, ok, one_line_error

from jobs import python_job


def test_indexes_commands(tms, service):
    path = service.storage_root / f"indexed_{os.getpid()}_{len(list(service.storage_root.iterdir()))}"
    t = MdtModelledTable(path, "MERGE_ON_READ", 8, partitions=["files"])
    t.write([rec(i, 1) for i in range(10)], "insert")
    table = str(as_json(tms("tables", "register", str(path), "--json"))["id"])

    assert ok(tms("indexes", "list", table)).strip() == f"table {table}: built files; building -"
    assert "admin" in one_line_error(tms("indexes", "build", table, "record_index", role="operator"))
    assert "needs the column" in one_line_error(tms("indexes", "build", table, "secondary_index_city"))
    assert "needs record_index built first" in one_line_error(tms("indexes", "build", table, "secondary_index_city",
                                                                  "--column", "city"))
    task = as_json(tms("indexes", "build", table, "record_index", "--json"))
    assert (task["service"], task["state"]) == ("indexing", "RUNNABLE")
    assert as_json(tms("indexes", "list", table, "--json"))["building"] == ["record_index"]
    assert python_job.main(["--table", str(path), "--instant", task["instant"], "--action", "indexing"]) == 0
    assert ok(tms("indexes", "list", table)).strip() == f"table {table}: built files, record_index; building -"
    check_metadata_table(path, t.model.expected())

    asked = tms("indexes", "drop", table, "record_index", input="n\n")
    assert "nothing dropped" in asked.output
    assert ok(tms("indexes", "drop", table, "record_index", "--yes")).strip() == \
        f"table {table}: metadata partition record_index dropped"
    assert "no metadata partition record_index" in one_line_error(tms("indexes", "drop", table, "record_index",
                                                                      "--yes"))
