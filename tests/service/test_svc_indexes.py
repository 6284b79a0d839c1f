"""`/api/v1/tables/{id}/indexes`: an admin asks for the record index of a live table; the indexing instant is
scheduled and its task recorded; a writer commits meanwhile; the Python job (as the worker runs it on the
python runner) builds it; `tms verify` and hudi-rs agree afterwards; the partition is dropped again."""
from __future__ import annotations

import secrets

from mdt_model import MdtModelledTable, check_metadata_table
from table_model import rec

from jobs import python_job
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action


def test_an_admin_builds_and_drops_the_record_index_of_a_live_table(client, tokens, hudi_tables):
    path = next(iter(hudi_tables.values())).parent / f"indexing_{secrets.token_hex(4)}"
    t = MdtModelledTable(path, "MERGE_ON_READ", 8, partitions=["files"])
    t.write([rec(i, 1) for i in range(20)], "insert")
    table = client.post("/api/v1/tables", json={"base_path": str(path)}, headers=tokens["admin"]).json()
    url = f"/api/v1/tables/{table['id']}/indexes"

    assert client.post(url, json={"partition": "record_index"}, headers=tokens["operator"]).status_code == 403
    for wrong, says in (({"partition": "secondary_index_city"}, "needs the column"),
                        ({"partition": "secondary_index_city", "column": "city"}, "needs record_index built first"),
                        ({"partition": "record_index", "column": "city"}, "for secondary indexes only"),
                        ({"partition": "partition_stats"}, "column_stats"), ({"partition": "files"}, "already has")):
        refused = client.post(url, json=wrong, headers=tokens["admin"])
        assert refused.status_code == 422 and says in refused.text, refused.text
    assert not HudiTable.load(str(path)).timeline.pending()   # the refusals wrote nothing
    response = client.post(url, json={"partition": "record_index"}, headers=tokens["admin"])
    assert response.status_code == 202, response.text
    task = response.json()
    assert (task["service"], task["state"]) == ("indexing", "RUNNABLE")
    pending = HudiTable.load(str(path)).timeline.get(task["instant"])
    assert pending.action == Action.INDEXING and pending.is_requested
    assert client.get(url, headers=tokens["viewer"]).json() == {"table_id": table["id"], "built": ["files"],
                                                                 "building": ["record_index"]}
    again = client.post(url, json={"partition": "record_index"}, headers=tokens["admin"])
    assert again.status_code == 422 and "already being built" in again.text

    t.write([rec(i, 2) for i in range(15, 30)])               # the writer goes on while it is inflight
    assert python_job.main(["--table", str(path), "--instant", task["instant"], "--action", "indexing"]) == 0
    assert HudiTable.load(str(path)).timeline.get(task["instant"]).is_completed
    assert client.get(url, headers=tokens["viewer"]).json()["built"] == ["files", "record_index"]
    t.write([rec(i, 3) for i in range(25, 35)])
    check_metadata_table(path, t.model.expected())

    assert client.delete(f"{url}/record_index", headers=tokens["operator"]).status_code == 403
    assert client.delete(f"{url}/record_index", headers=tokens["admin"]).status_code == 204
    assert client.get(url, headers=tokens["viewer"]).json()["built"] == ["files"]
    assert not (path / ".hoodie" / "metadata" / "record_index").exists()
    gone = client.delete(f"{url}/record_index", headers=tokens["admin"])
    assert gone.status_code == 422 and "no metadata partition record_index" in gone.text
    t.write([rec(40, 1)])
    check_metadata_table(path, t.model.expected())
