"""The writers' callback options in the operator's hands: registration and the table's detail give the exact Hudi
writer options that send the table's commits to TMS (the key named by where it is, never given), and the table
page shows them and says when the table's commits reach TMS only by the periodic pass."""
from __future__ import annotations

import html
from types import SimpleNamespace

from conftest import CALLBACK_KEY
from test_svc_callback import hudi_message
from test_svc_dashboard import _sign_in

from service.writer_options import callback_key_hint, callback_url
from tms.config import Settings

SERVICE_KEY = "<the service's TMS_CALLBACK_KEY>"


def _options(key: str, url: str = "http://testserver") -> dict[str, str]:
    return {"hoodie.write.commit.callback.on": "true",
            "hoodie.write.commit.callback.http.url": f"{url}/api/v1/hudi/callback",
            "hoodie.write.commit.callback.http.api.key": key}


def _page(client, tokens, table_id: int) -> str:
    _sign_in(client, tokens["viewer"])
    try:
        return html.unescape(client.get(f"/ui/tables/{table_id}").text)
    finally:
        client.cookies.clear()  # the client is the session's: the next test starts signed out


def test_registration_and_the_detail_give_the_writers_callback_options(client, tokens, register):
    table = register("mor_v8_trips_8i3u1d")
    assert table["writer_options"] == _options(SERVICE_KEY)
    detail = client.get(f"/api/v1/tables/{table['id']}", headers=tokens["viewer"])
    assert CALLBACK_KEY not in detail.text, "the key itself is never given"
    assert detail.json()["writer_options"] == _options(SERVICE_KEY)


def test_a_table_with_its_own_key_is_told_so(register):
    table = register("mor_v8_trips_8i3u1d", callback_key="the-tables-own-key")
    assert table["writer_options"] == _options(
        "<the table's own callback key, given at its registration, or the service's TMS_CALLBACK_KEY>")
    assert "the-tables-own-key" not in str(table)


def test_the_page_says_commits_reach_tms_by_the_periodic_pass_until_a_callback_arrives(
        client, tokens, register, callback_headers):
    table = register("mor_v8_trips_8i3u1d")
    assert client.get(f"/api/v1/tables/{table['id']}", headers=tokens["viewer"]).json()["last_event_at"] is None
    page = _page(client, tokens, table["id"])
    assert "No callback received from this table yet: its commits reach TMS only by the planner's periodic pass" \
        in page
    for key, value in _options(SERVICE_KEY).items():
        assert f"{key}={value}\n" in page

    sent = client.post("/api/v1/hudi/callback", json=hudi_message(table["base_path"], "20990101000000000"),
                       headers=callback_headers)
    assert sent.status_code == 202, sent.text
    assert client.get(f"/api/v1/tables/{table['id']}", headers=tokens["viewer"]).json()["last_event_at"] is not None
    page = _page(client, tokens, table["id"])
    assert "Last event from its writers" in page and "No callback received" not in page


def test_the_callback_url_is_the_public_url_and_the_key_where_tms_up_keeps_it(tmp_path):
    request = SimpleNamespace(base_url="http://10.0.0.7:8080/")
    assert callback_url(Settings(), request) == "http://10.0.0.7:8080/api/v1/hudi/callback"  # type: ignore[arg-type]
    public = Settings(public_url="https://tms.example.com/tms/")
    assert callback_url(public, request) == "https://tms.example.com/tms/api/v1/hudi/callback"  # type: ignore[arg-type]

    (tmp_path / "callback-key").write_text("kept-key\n")
    kept = Settings(data_dir=tmp_path, callback_key="kept-key")
    assert callback_key_hint(kept, table_has_own_key=False) == f"<the callback key in {tmp_path / 'callback-key'}>"
    other = Settings(data_dir=tmp_path, callback_key="another-key")  # not the file's: the setting
    assert callback_key_hint(other, table_has_own_key=False) == SERVICE_KEY
    assert callback_key_hint(Settings(data_dir=tmp_path), table_has_own_key=False) == (
        "<none set: give the table a callback key, or the service a TMS_CALLBACK_KEY>")
