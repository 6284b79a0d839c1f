"""Issue 36: the planner's decision on each service is auditable — `GET /api/v1/tables/{id}` ("services") and the
table's page say, per service, whether it is due, when next, and why it is not planned now, as the planner's
last pass decided it."""
from __future__ import annotations

import html
import re
import secrets
import shutil

import pytest
from planning_support import ModelledTable, rec, run_compaction

from planner.runner import Planner
from tms.planning.decisions import PlannerOptions


@pytest.fixture
def written(hudi_tables):
    """A MERGE_ON_READ table of 16 writes (an insert, then upserts) under the service's storage root: more than the
    10 commits a clean retains by default, but every file group has a single slice, so nothing is cleanable."""
    path = next(iter(hudi_tables.values())).parent / f"outlook-{secrets.token_hex(4)}"
    t = ModelledTable(path)
    t.write([rec(i, 10) for i in range(6)], "insert")
    for n in range(15):
        t.write([rec(i, 20 + n) for i in range(6)])
    yield t
    shutil.rmtree(path, ignore_errors=True)


def _detail(client, tokens, table_id: int) -> dict:
    response = client.get(f"/api/v1/tables/{table_id}", headers=tokens["viewer"])
    assert response.status_code == 200, response.text
    return response.json()


def test_a_clean_with_nothing_to_clean_yet_says_why(client, tokens, app, written):
    table = client.post("/api/v1/tables", json={"base_path": str(written.path),
                                                 "policies": {"hoodie.compact.inline.max.delta.commits": 20}},
                        headers=tokens["admin"]).json()
    before = _detail(client, tokens, table["id"])["services"]
    assert set(before) == {"compaction", "clustering", "clean", "rollback", "archive"}
    assert "not read the table yet" in before["clean"]["reason"]

    trigger = app.state.settings.planner_clean_commits  # 5, which health's clean_lag reads too
    options = PlannerOptions(services=frozenset({"compaction", "clean", "rollback"}), clean_commits=trigger)
    assert Planner(app.state.database, options, watch_timelines=False).reconcile(table["id"])
    detail = _detail(client, tokens, table["id"])
    services = detail["services"]
    clean = services["clean"]
    # The writes made the clean due; the planner attempted it and found nothing, and says so (not merely
    # "16 completed writes since the last clean").
    assert clean["scheduled"] and not clean["due"] and clean["writes_until_due"] == trigger
    assert "0 completed writes since the last clean attempt at " in clean["reason"]
    assert "nothing to clean: no file slice older than the earliest commit to retain" in clean["reason"]
    assert services["clustering"]["reason"].startswith("not scheduled") and not services["clustering"]["scheduled"]
    compaction = services["compaction"]
    assert not compaction["due"] and compaction["writes_until_due"] == 4  # 16 of the table's 20 delta commits
    assert services["rollback"]["reason"] == "nothing to roll back: no pending write"
    [lag] = [r for r in detail["health"]["reasons"] if r.startswith("16 completed writes since the last clean")]
    assert "; the planner's last attempt (at " in lag and "): nothing to clean: no file slice" in lag
    assert detail["health"]["status"] == "ok", "attempted, nothing to clean: not a due service left unplanned"

    from test_svc_dashboard import _sign_in
    _sign_in(client, tokens["viewer"])
    try:
        page = client.get(f"/ui/tables/{table['id']}").text
    finally:
        client.cookies.clear()  # the client is the session's: the next test starts signed out
    lines = dict(re.findall(r'<li class="\w+"><b>(\w+)</b>: ([^<]*)</li>', page.split('id="services"')[1]))
    assert html.unescape(lines["clean"]) == clean["reason"]


def test_archival_held_back_by_hudis_rules_says_why_and_when_it_is_attempted_again(client, tokens, app, hudi_tables):
    path = next(iter(hudi_tables.values())).parent / f"outlook-{secrets.token_hex(4)}"
    t = ModelledTable(path, "COPY_ON_WRITE", version=8)
    try:
        for n in range(6):
            t.write([rec(0, 10 + n)])
        # over hoodie.keep.max.commits (4), but the cleaner retains 4 commits: Hudi's archiver keeps them all
        table = client.post("/api/v1/tables", json={"base_path": str(path), "policies": {
            "hoodie.keep.min.commits": 2, "hoodie.keep.max.commits": 4, "hoodie.cleaner.commits.retained": 4}},
                            headers=tokens["admin"]).json()
        options = PlannerOptions(services=frozenset({"archive"}), clean_commits=5)
        assert Planner(app.state.database, options, watch_timelines=False).reconcile(table["id"])
        archive = _detail(client, tokens, table["id"])["services"]["archive"]
        assert archive["scheduled"] and not archive["due"] and archive["writes_until_due"] == 2
        assert archive["reason"].startswith("6 completed commits on the active timeline (the limit is 4, "
                                            "hoodie.keep.max.commits), but the last archive attempt at ")
        assert "planned nothing (nothing to archive: " in archive["reason"]
        assert archive["reason"].endswith(": 2 more before the next attempt")

        client.patch(f"/api/v1/tables/{table['id']}", json={"policies": {"hoodie.archive.automatic": False}},
                     headers=tokens["admin"]).raise_for_status()
        assert Planner(app.state.database, options, watch_timelines=False).reconcile(table["id"])
        archive = _detail(client, tokens, table["id"])["services"]["archive"]
        assert not archive["scheduled"] and "hoodie.archive.automatic=false" in archive["reason"]
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_compaction_outlook_says_why_the_last_plan_was_a_full_pass(client, tokens, app, hudi_tables):
    """Issue 37: a policy change makes the next compaction plan a full pass, and the table's outlook says so."""
    path = next(iter(hudi_tables.values())).parent / f"outlook-{secrets.token_hex(4)}"
    t = ModelledTable(path, version=8)
    try:
        t.write([rec(i, 10) for i in range(6)], "insert")
        t.write([rec(1, 11)])
        table = client.post("/api/v1/tables", json={"base_path": str(path), "policies": {
            "hoodie.compact.inline.max.delta.commits": 1}}, headers=tokens["admin"]).json()
        options = PlannerOptions(services=frozenset({"compaction"}), clean_commits=5)

        def planned_and_run() -> str:
            assert Planner(app.state.database, options, watch_timelines=False).reconcile(table["id"])
            [planned] = t.table().timeline.pending(("compaction",))
            run_compaction(t.table(), planned.timestamp)
            return planned.timestamp
        first = planned_and_run()
        assert ("; the last plan (" + first + ") was a full pass (no completed compaction on the active timeline, "
                "nor archived since") in _detail(client, tokens, table["id"])["services"]["compaction"]["reason"]
        client.patch(f"/api/v1/tables/{table['id']}", json={"policies": {
            "hoodie.compact.inline.max.delta.commits": 1, "hoodie.compaction.target.io": 1}},
                     headers=tokens["admin"]).raise_for_status()
        t.write([rec(2, 12)])
        second = planned_and_run()
        assert (f"; the last plan ({second}) was a full pass (the compaction policy changed since the last compaction "
                f"{first} (one of hoodie.compaction.strategy, ") \
            in _detail(client, tokens, table["id"])["services"]["compaction"]["reason"]
        t.write([rec(3, 13)])
        third = planned_and_run()
        assert (f"; the last plan ({third}) was incremental (1 partitions written since or left out by compaction "
                f"{second})") in _detail(client, tokens, table["id"])["services"]["compaction"]["reason"]
        t.check(hudi_rs=False)
    finally:
        shutil.rmtree(path, ignore_errors=True)
