"""A full pass over a giant table (issue 37 item 3): compaction, clustering and clean plans read the table a few
partitions at a time (chunked_views), keeping few of the partition search's listings, and plan exactly what one
view of the whole table plans."""
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planning_support import ModelledTable, now, policy, run_compaction

import tms.hudi.fs_view.view as view_module
import tms.planning.clean_partitions as clean_partitions
from tms.hudi.fs_view.partitions import list_partitions
from tms.hudi.fs_view.view import chunked_views
from tms.hudi.storage.table_storage import LocalStorage
from tms.hudi.timeline.instant import State
from tms.hudi.timeline.serde import parse_cleaner_plan, parse_compaction_plan, parse_requested_replace_metadata
from tms.planning.clean import plan_clean_or_why
from tms.planning.clustering import plan_clustering
from tms.planning.compaction import plan_compaction
from tms.planning.incremental import WRITES_FROM_KEY

CITIES = [f"c{n}" for n in range(7)]
CLEAN_EVERY_COMMIT = {"hoodie__cleaner__commits__retained": 1, "hoodie__cleaner__incremental__mode": False}
SMALL_FILES = {"hoodie__clustering__plan__strategy__small__file__limit": 10**9,
               "hoodie__clustering__plan__strategy__max__num__groups": 3}


def _rows(cities, ts: int) -> list[dict]:
    return [{"id": n * 100 + k, "name": f"n{n}-{k}-{ts}", "ts": ts, "city": CITIES[n]}
            for n in sorted(cities) for k in range(2)]


def _plans(t: ModelledTable) -> tuple:
    """The compaction, clustering and clean plans the table gets now, each removed after it is read."""
    out = []
    for make, parse, options in ((plan_compaction, parse_compaction_plan, {}),
                                 (plan_clustering, parse_requested_replace_metadata, SMALL_FILES),
                                 (None, parse_cleaner_plan, CLEAN_EVERY_COMMIT)):
        table = t.table()
        planned = (make(table, policy(**options), now(), force=True) if make
                   else plan_clean_or_why(table, policy(**options), now()))
        if isinstance(planned, str) or planned is None:
            out.append(planned)
            continue
        plan = parse(table.timeline.read_plan(planned.instant))
        # the moment each plan was made (the earliest write that may complete after it) differs between two plans
        made = re.sub(rf"'{re.escape(WRITES_FROM_KEY)}': '\d+'", "<writes from>", repr(plan))
        out.append(made.replace(planned.instant, "<instant>"))
        requested = table.timeline.states_of(planned.instant)[State.REQUESTED]
        table.storage.delete(table.timeline.path_of(requested))
    return tuple(out)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=st.lists(st.frozensets(st.integers(0, len(CITIES) - 1), min_size=1, max_size=4), min_size=2, max_size=5),
       version=st.sampled_from([6, 8]), compact_first=st.booleans())
def test_a_pass_in_chunks_plans_what_one_view_of_the_table_plans(tmp_path_factory, writes, version, compact_first):
    t = ModelledTable(tmp_path_factory.mktemp("t") / "t", version=version)
    t.write(_rows(range(len(CITIES)), 1), "insert")
    for ts, cities in enumerate(writes, start=2):
        t.write(_rows(cities, ts))
        if compact_first and ts == 3:
            run_compaction(t.table(), plan_compaction(t.table(), policy(), now(), force=True).instant)
    whole = _plans(t)
    with pytest.MonkeyPatch.context() as mp:
        # A partition at a time, and the partition search keeping the listing of one partition at most.
        mp.setattr(view_module, "PARTITIONS_AT_ONCE", 1)
        mp.setattr(view_module, "FILES_KEPT", 3)
        mp.setattr(clean_partitions, "FILES_KEPT", 3)
        chunked = _plans(t)
    assert chunked == whole
    assert whole[0] is not None or compact_first  # log files to compact, unless all were compacted


def test_the_partition_search_keeps_listings_up_to_its_bound_and_the_chunks_list_the_others(tmp_path, monkeypatch):
    t = ModelledTable(tmp_path / "t", version=8)
    t.write(_rows(range(len(CITIES)), 1), "insert")
    table = t.table()
    listing = list_partitions(table, files_kept=4)
    kept = set(listing.files)
    assert listing.partitions == [f"city={c}" for c in CITIES]
    assert 0 < sum(len(files) for files in listing.files.values()) <= 4 and 0 < len(kept) < len(CITIES)
    listed: list[str] = []
    real = LocalStorage.listdir
    monkeypatch.setattr(LocalStorage, "listdir", lambda self, rel="": listed.append(rel) or real(self, rel))
    views = list(chunked_views(table, listing=listing, at_once=3))
    assert [v.partitions for v in views] == [listing.partitions[:3], listing.partitions[3:6], listing.partitions[6:]]
    assert not listing.files  # each chunk took its partitions' listings out
    assert sorted(listed) == sorted(set(listing.partitions) - kept)  # the others listed once, as their chunk came
    assert sum(len(v.file_groups()) for v in views) == len(table.file_system_view().file_groups())
