"""Adoption: requested plans the caller has no task for, with their statistics; nothing planned twice."""
from planning_support import ModelledTable, now, policy, rec

from tms.hudi.timeline.instant import Action, State
from tms.hudi.timeline.serde import CompactionOperation, CompactionPlan, serialize_compaction_plan
from tms.planning.adoption import find_unknown_plans
from tms.planning.clustering import plan_clustering
from tms.planning.compaction import plan_compaction


def test_unknown_requested_plans_are_found_with_their_statistics(tmp_path):
    t = ModelledTable(tmp_path / "t", version=6)
    t.write([rec(i, 10) for i in range(3)], "insert")     # a first file group per city
    t.write([rec(i, 10) for i in range(3, 6)], "insert")  # a second one
    t.write([rec(0, 20), rec(1, 20)])                     # logs in the first sf and nyc groups
    blocker = t.write([rec(4, 40)], leave_inflight=True)  # the second nyc group, in flight
    compaction = plan_compaction(t.table(), policy(hoodie__compact__inline__max__delta__commits=1), now())
    assert compaction.blockers == (blocker,) and compaction.stats.operations == 2

    # A plan a writer scheduled, as Java writes it, for the first sp file group.
    fs = next(fs for fs in t.table().file_system_view().latest_slices() if fs.partition == "city=sp")
    foreign = t.table().timeline.create_requested("compaction", serialize_compaction_plan(CompactionPlan(
        operations=[CompactionOperation(base_instant_time=fs.base_instant, file_id=fs.file_id,
                                        partition_path=fs.partition, data_file_path=fs.base_file.file_name)])))
    t.table().timeline.create_requested(Action.REPLACE_COMMIT)  # an insert_overwrite's empty requested file: not a plan
    clustering = plan_clustering(t.table(), policy(hoodie__clustering__async__max__commits=1), now())
    assert clustering.stats.operations == 2  # the second sf and sp groups, one group each

    found = find_unknown_plans(t.table(), known_instants={compaction.instant, clustering.instant})
    assert [(p.instant, p.service) for p in found] == [(foreign.timestamp, "compaction")]
    assert found[0].stats.operations == 1 and found[0].stats.total_bytes == fs.base_file.size
    everything = find_unknown_plans(t.table(), known_instants=set())
    assert everything == [compaction, found[0], clustering]
    assert everything[0].blockers == (blocker,), "a held plan is adopted held"
    table = t.table()
    table.timeline.transition_to_inflight(table.timeline.states_of(foreign.timestamp)[State.REQUESTED])
    assert find_unknown_plans(t.table(), {compaction.instant, clustering.instant}) == [], \
        "a plan already running is not adopted"
