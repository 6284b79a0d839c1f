"""Issue 36: the planner's decision on each service is auditable — `GET /api/v1/tables/{id}` ("services") and the
table's page say, per service, whether it is due, when next, and why it is not planned now, as the planner's
last pass decided it."""
from __future__ import annotations

import html
import re
import secrets
import shutil

import pytest
from planning_support import ModelledTable, rec

from planner.runner import Planner
from tms.planning.decisions import PlannerOptions

OPTIONS = PlannerOptions(services=frozenset({"compaction", "clean", "rollback"}), clean_commits=3)


@pytest.fixture
def written(hudi_tables):
    """A MERGE_ON_READ table of three writes (one insert, two upserts) under the service's storage root."""
    path = next(iter(hudi_tables.values())).parent / f"outlook-{secrets.token_hex(4)}"
    t = ModelledTable(path)
    t.write([rec(i, 10) for i in range(6)], "insert")
    t.write([rec(i, 20) for i in range(6)])
    t.write([rec(i, 30) for i in range(6)])
    yield t
    shutil.rmtree(path, ignore_errors=True)


def _services(client, tokens, table_id: int) -> dict:
    response = client.get(f"/api/v1/tables/{table_id}", headers=tokens["viewer"])
    assert response.status_code == 200, response.text
    return response.json()["services"]


def test_a_clean_with_nothing_to_clean_yet_says_why(client, tokens, app, written):
    table = client.post("/api/v1/tables", json={"base_path": str(written.path)}, headers=tokens["admin"]).json()
    before = _services(client, tokens, table["id"])
    assert set(before) == {"compaction", "clustering", "clean", "rollback"}
    assert "not read the table yet" in before["clean"]["reason"]

    assert Planner(app.state.database, OPTIONS, watch_timelines=False).reconcile(table["id"])
    services = _services(client, tokens, table["id"])
    clean = services["clean"]
    # Three writes made the clean due; the planner attempted it and found nothing, and says so (not merely
    # "3 completed writes since the last clean").
    assert clean["scheduled"] and not clean["due"] and clean["writes_until_due"] == 3
    assert "0 completed writes since the last clean attempt at " in clean["reason"]
    assert "nothing to clean yet" in clean["reason"] and "hoodie.cleaner.commits.retained" in clean["reason"]
    assert services["clustering"]["reason"].startswith("not scheduled") and not services["clustering"]["scheduled"]
    compaction = services["compaction"]
    assert not compaction["due"] and compaction["writes_until_due"] == 2  # 3 of Hudi's default 5 delta commits
    assert services["rollback"]["reason"] == "nothing to roll back: no pending write"

    from test_svc_dashboard import _sign_in
    _sign_in(client, tokens["viewer"])
    try:
        page = client.get(f"/ui/tables/{table['id']}").text
    finally:
        client.cookies.clear()  # the client is the session's: the next test starts signed out
    lines = dict(re.findall(r'<li class="\w+"><b>(\w+)</b>: ([^<]*)</li>', page.split('id="services"')[1]))
    assert html.unescape(lines["clean"]) == clean["reason"]
