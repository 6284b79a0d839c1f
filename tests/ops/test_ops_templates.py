"""`tms templates ...` against a live service: a template set, listed and shown, a table registered under it
showing which of its values came from the template, the service's refusal as one line, and the delete."""
from __future__ import annotations

from test_ops_cli import as_json, ok, one_line_error, trips  # noqa: F401 (the fixture)


def test_templates_commands(tms, trips, service):  # noqa: F811
    set_line = ok(tms("templates", "set", "lake", "--under", str(service.storage_root), "--policy",
                      "hoodie.compact.inline.max.delta.commits=9", "--queue", "bulk", "--priority", "3"))
    assert set_line == f"template lake (under {service.storage_root}): applies to 0 table(s), changed 0\n"
    registered = as_json(tms("tables", "register", trips, "--json"))
    assert (registered["template"], registered["queue"], registered["priority"]) == ("lake", "bulk", 3)
    assert registered["policies"]["hoodie.compact.inline.max.delta.commits"] == 9
    shown = ok(tms("tables", "show", str(registered["id"])))
    assert "policy template: lake" in shown
    assert "hoodie.compact.inline.max.delta.commits" in shown and "9 (template:lake)" in shown

    listed = ok(tms("templates", "list"))
    assert listed.splitlines()[0].split() == ["NAME", "SCOPE", "TABLES", "SETTINGS"]
    assert "lake" in listed and "queue=bulk" in listed
    [template] = as_json(tms("templates", "list", "--json"))
    assert template["tables"] == 1
    assert "tables" in ok(tms("templates", "show", "lake"))
    assert one_line_error(tms("templates", "set", "t", "--policy", "tms.ttl.days=3")).startswith(
        "error: body.policies.tms.ttl.days: tms.ttl.days is set on a table, not a template")
    assert "needs the admin role" in one_line_error(tms("templates", "set", "t", role="operator"))

    assert ok(tms("templates", "delete", "lake")) == "template lake deleted\n"
    table = as_json(tms("tables", "show", str(registered["id"]), "--json"))
    assert (table["template"], table["queue"], table["priority"]) == (None, None, 0)
    assert table["policies"]["hoodie.compact.inline.max.delta.commits"] == 5
