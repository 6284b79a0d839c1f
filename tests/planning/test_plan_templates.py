"""Policy templates resolved: the most specific matching template (name pattern, then database, then the
longer path prefix) applies, the table's own settings win, and lock options go as one group."""
from __future__ import annotations

from tms.planning.templates import Template, matching_template, own_settings, resolve

DELTAS = "hoodie.compact.inline.max.delta.commits"
LOCK = "hoodie.write.lock.provider"
FS_LOCK = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
TEMPLATES = [Template("everything"), Template("lake", path_prefix="/lake"),
             Template("sales", path_prefix="/lake/sales"), Template("db", database="sales"),
             Template("trips", name_pattern="trips_*"),
             Template("sales-trips", database="sales", name_pattern="trips_*")]


def _match(database: str, name: str, base_path: str) -> str | None:
    found = matching_template(TEMPLATES, database=database, name=name, base_path=base_path)
    return found.name if found else None


def test_the_most_specific_template_matches():
    assert _match("default", "x", "/elsewhere/x") == "everything"
    assert _match("default", "x", "/lake/x") == "lake"
    assert _match("default", "x", "/lake/sales/x") == "sales"
    assert _match("default", "x", "/lake/salesman/x") == "lake", "a prefix matches at folder boundaries"
    assert _match("sales", "x", "/lake/sales/x") == "db"
    assert _match("default", "trips_1", "/lake/sales/trips_1") == "trips"
    assert _match("sales", "trips_1", "/lake/x") == "sales-trips"
    assert matching_template([Template("db.name", name_pattern="sales.orders")], database="sales", name="orders",
                             base_path="/x") is not None


def test_own_settings_override_and_lock_options_go_as_a_group():
    template = Template("t", policies={DELTAS: 9, LOCK: FS_LOCK, "hoodie.write.lock.filesystem.expire": "5"},
                        queue="bulk", priority=4)
    effective = resolve(own_settings(policies={DELTAS: 2}, priority=0), template)
    assert effective.policies == {DELTAS: 2} and effective.priority == 0 and effective.queue == "bulk"
    assert effective.concurrency_options == {LOCK: FS_LOCK, "hoodie.write.lock.filesystem.expire": "5"}
    assert effective.source(DELTAS) == "table" and effective.source("queue") == "template:t"
    assert effective.source("hoodie.cleaner.policy") == "default"
    own_lock = resolve(own_settings(concurrency_options={"hoodie.write.concurrency.mode": "SINGLE_WRITER"}), template)
    assert own_lock.concurrency_options == {"hoodie.write.concurrency.mode": "SINGLE_WRITER"}
    assert own_lock.source(LOCK) == "default" and own_lock.policies == {DELTAS: 9}
    assert resolve(own_settings(), None).columns() == {"policies": {}, "concurrency_options": {}, "queue": None,
                                                        "priority": 0, "template": None}
