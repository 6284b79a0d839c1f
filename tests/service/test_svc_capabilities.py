"""What TMS can do for a table, as the API reports it: registration answers with the services TMS runs on the
table and why not the others; the table's detail and health show the same, recomputed from its
hoodie.properties as they are now; a table TMS can do nothing for is refused at registration with one line;
`POST /api/v1/tables/{id}:plan` refuses a service TMS cannot run with one line and writes nothing."""
from __future__ import annotations

import html
import re
import secrets
import shutil
from pathlib import Path

import pytest

from tms.db import TaskRepo
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.properties import format_properties

SERVICES = {"reading", "compaction", "clustering", "clean", "rollback", "restore"}
NOT_ASKED = ("clustering is not asked for by the table's policy (hoodie.clustering.async.enabled=true in its policy "
             "or its template turns it on)")


@pytest.fixture
def copy_of(hudi_tables):
    """copy_of(fixture) -> a writable copy under the service's storage root (removed after the test)."""
    made: list[Path] = []

    def _copy(name: str) -> Path:
        path = hudi_tables[name].parent / f"{name}-capab-{secrets.token_hex(4)}"
        shutil.copytree(hudi_tables[name], path)
        made.append(path)
        return path

    yield _copy
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


def _set(path: Path, changes: dict[str, str]) -> None:
    props = {**HudiTable.load(str(path)).config.props, **changes}
    (path / ".hoodie" / "hoodie.properties").write_text(format_properties(props))


def _timeline_files(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in (path / ".hoodie").rglob("*") if p.is_file())


def _post(client, tokens, path: Path):
    return client.post("/api/v1/tables", json={"base_path": str(path)}, headers=tokens["admin"])


def test_registration_reports_what_tms_runs_and_why_not(client, tokens, register, copy_of):
    mor = register("mor_v8_trips_8i3u1d")["capabilities"]
    runs = {"can_run": True, "reason": "", "engine": None}
    scheduled = {"scheduled": True, "not_scheduled_reason": ""}
    assert mor == {"reading": {**runs, "scheduled": None, "not_scheduled_reason": ""},
                   "restore": {**runs, "scheduled": None, "not_scheduled_reason": ""},
                   "compaction": {**runs, **scheduled}, "clean": {**runs, **scheduled},
                   "rollback": {**runs, **scheduled}, "archive": {**runs, **scheduled},
                   "clustering": {**runs, "scheduled": False, "not_scheduled_reason": NOT_ASKED}}
    cow = register("cow_v8_nonpartitioned")["capabilities"]
    assert not cow["compaction"]["can_run"] and "MERGE_ON_READ" in cow["compaction"]["reason"]
    assert all(cow[s]["can_run"] for s in SERVICES - {"compaction"})

    path = copy_of("mor_v8_trips_8i3u1d")
    _set(path, {"hoodie.table.metadata.partitions": "files,expr_index_price"})
    response = _post(client, tokens, path)
    assert response.status_code == 201, response.text
    caps = response.json()["capabilities"]
    for service in ("compaction", "clustering", "clean"):
        assert not caps[service]["can_run"]
        assert caps[service]["reason"].startswith("its metadata table has partitions TMS cannot keep in sync")
        assert "expr_index_price" in caps[service]["reason"]
    assert caps["rollback"]["can_run"] and caps["reading"]["can_run"]


def test_a_policy_asking_for_clustering_has_the_planner_schedule_it(client, tokens, copy_of):
    path = copy_of("mor_v8_trips_8i3u1d")
    response = client.post("/api/v1/tables", headers=tokens["admin"], json={
        "base_path": str(path), "policies": {"hoodie.clustering.async.enabled": True}})
    assert response.status_code == 201, response.text
    assert response.json()["capabilities"]["clustering"] == {"can_run": True, "reason": "", "engine": None,
                                                             "scheduled": True, "not_scheduled_reason": ""}
    table_id = response.json()["id"]
    assert _service_lines(client, tokens, table_id)["clustering"] == "runs"
    response = client.patch(f"/api/v1/tables/{table_id}", headers=tokens["admin"],
                            json={"policies": {"hoodie.clustering.async.enabled": False}})
    assert response.status_code == 200, response.text
    clustering = client.get(f"/api/v1/tables/{table_id}", headers=tokens["viewer"]).json()["capabilities"]["clustering"]
    assert clustering["scheduled"] is False
    assert clustering["not_scheduled_reason"].startswith("clustering is turned off by the table's policy")
    assert _service_lines(client, tokens, table_id)["clustering"] == (
        "runs, on request only: clustering is turned off by the table's policy (hoodie.clustering.async.enabled=false)")


def test_the_table_page_says_clustering_is_not_asked_for_by_the_tables_policy(client, tokens, copy_of):
    table = _post(client, tokens, copy_of("mor_v8_trips_8i3u1d")).json()
    lines = _service_lines(client, tokens, table["id"])
    assert lines["clustering"] == f"runs, on request only: {NOT_ASKED}"
    assert lines["compaction"] == "runs" and lines["clean"] == "runs"


def _service_lines(client, tokens, table_id: int) -> dict[str, str]:
    """The table page's "What TMS runs": service -> its line."""
    from test_svc_dashboard import _sign_in
    _sign_in(client, tokens["viewer"])
    try:
        page = client.get(f"/ui/tables/{table_id}").text
    finally:
        client.cookies.clear()  # the client is the session's: the next test starts signed out
    return {service: html.unescape(line)
            for service, line in re.findall(r'<li class="(?:runs|refused)"><b>(\w+)</b>: ([^<]*)</li>', page)}


def test_detail_and_health_follow_the_tables_properties(client, tokens, copy_of):
    path = copy_of("mor_v6_trips_8i1u")
    table = _post(client, tokens, path).json()
    detail = client.get(f"/api/v1/tables/{table['id']}", headers=tokens["viewer"]).json()
    assert all(c["can_run"] for c in detail["capabilities"].values())
    assert detail["health"] == {"status": "ok", "reasons": [], "score": 100}

    _set(path, {"hoodie.compaction.payload.class": "com.acme.MyPayload"})  # a writer's change
    detail = client.get(f"/api/v1/tables/{table['id']}", headers=tokens["viewer"]).json()
    caps = detail["capabilities"]
    assert [s for s in sorted(SERVICES) if not caps[s]["can_run"]] == ["clustering", "compaction", "reading"]
    assert "merge mode CUSTOM" in caps["compaction"]["reason"]
    assert detail["health"]["status"] == "warning"
    assert f"TMS cannot run compaction: {caps['compaction']['reason']}" in detail["health"]["reasons"]
    assert f"TMS cannot read it: {caps['reading']['reason']}" in detail["health"]["reasons"]


def test_a_table_tms_can_do_nothing_for_is_refused_at_registration(client, tokens, copy_of):
    path = copy_of("cow_v9_lance_nonpartitioned")  # with a metadata table: on ORC base files nothing can run
    _set(path, {"hoodie.table.base.file.format": "ORC"})
    response = _post(client, tokens, path)
    assert response.status_code == 422
    [line] = response.json()["detail"].splitlines()
    assert line.startswith("body.base_path: TMS can neither read this table nor run any table service on it: ")
    assert "ORC" in line
    assert client.get("/api/v1/tables", headers=tokens["viewer"]).json()["total"] == 0


def test_plan_now_refuses_a_service_tms_cannot_run_and_writes_nothing(client, tokens, copy_of, app):
    path = copy_of("mor_v6_trips_8i1u")
    table = _post(client, tokens, path).json()
    _set(path, {"hoodie.table.metadata.partitions.inflight": "record_index"})
    before = _timeline_files(path)
    response = client.post(f"/api/v1/tables/{table['id']}:plan", json={"service": "compaction"},
                           headers=tokens["operator"])
    assert response.status_code == 422
    [line] = response.json()["detail"].splitlines()
    assert line.startswith("TMS cannot run compaction on table ") and "record_index" in line
    assert _timeline_files(path) == before
    with app.state.database.transaction() as session:
        assert TaskRepo(session).find(table_id=table["id"])[0] == []


def test_the_dashboards_table_page_shows_a_line_per_service(client, tokens, copy_of):
    from test_svc_dashboard import _sign_in

    path = copy_of("mor_v8_trips_8i3u1d")
    table = _post(client, tokens, path).json()
    _set(path, {"hoodie.table.metadata.partitions": "files,expr_index_price"})
    _sign_in(client, tokens["viewer"])
    try:
        page = client.get(f"/ui/tables/{table['id']}").text
    finally:
        client.cookies.clear()  # the client is the session's: the next test starts signed out
    lines = re.findall(r'<li class="(runs|refused)"><b>(\w+)</b>: ([^<]*)</li>', page)
    assert [(state, service) for state, service, _ in lines] == [
        ("runs", "reading"), ("refused", "compaction"), ("refused", "clustering"), ("refused", "clean"),
        ("runs", "rollback"), ("refused", "restore"),  # a restore undoes completed writes the index holds
        ("runs", "archive")]  # archival moves instant files only
    assert lines[0][2] == "runs"
    assert lines[1][2].startswith("refused because its metadata table has partitions TMS cannot keep in sync")
    assert "expr_index_price" in lines[1][2]
