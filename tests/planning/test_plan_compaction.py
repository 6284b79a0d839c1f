"""Compaction: Hudi's trigger strategies (counted since the last completed compaction), its compaction
strategies and per-operation metrics, and plans that read back as Hudi writes them."""
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from planning_support import (
    ModelledTable,
    now,
    policy,
    rec,
    run_compaction,
    set_timeline_zone,
    told_writers_zone,
    writes_in,
)

from tms.hudi.errors import UnsupportedTableError
from tms.hudi.timeline.instant import State, instant_to_datetime
from tms.hudi.timeline.serde import CompactionOperation, parse_compaction_plan
from tms.planning.compaction import plan_compaction
from tms.planning.compaction_strategy import capture_metrics, order_and_filter
from tms.planning.digest import TimelineDigest
from tms.planning.errors import PlanningError
from tms.planning.policy import CompactionStrategy, TriggerStrategy
from tms.planning.schedule import schedule
from tms.planning.stats import plan_stats
from tms.planning.triggers import compaction_trigger

MB = 1024 * 1024


def _table(tmp_path, version=6, **kw) -> ModelledTable:
    t = ModelledTable(tmp_path / "t", version=version, **kw)
    t.write([rec(i, 10) for i in range(9)], "insert")
    return t


def _trigger(strategy, commits=3, seconds=3600):
    return policy(hoodie__compact__inline__trigger__strategy=strategy.value,
                  hoodie__compact__inline__max__delta__commits=commits,
                  hoodie__compact__inline__max__delta__seconds=seconds)


@pytest.mark.parametrize("strategy,count_only,time_only,both", [
    (TriggerStrategy.NUM_COMMITS, True, False, True),
    (TriggerStrategy.TIME_ELAPSED, False, True, True),
    (TriggerStrategy.NUM_AND_TIME, False, False, True),
    (TriggerStrategy.NUM_OR_TIME, True, True, True),
])
def test_trigger_strategies(tmp_path, strategy, count_only, time_only, both):
    t = _table(tmp_path)
    table = t.table()
    first = table.timeline.instants()[0].timestamp
    later = instant_to_datetime(first, table.config.timeline_zone) + timedelta(hours=2)
    assert not compaction_trigger(table, _trigger(strategy), now()).due
    assert compaction_trigger(table, _trigger(strategy), later).due is time_only
    t.write([rec(0, 20)])
    t.write([rec(1, 20)], leave_inflight=True)  # Hudi counts delta commits in any state
    decision = compaction_trigger(t.table(), _trigger(strategy), now())
    assert (decision.commits, decision.since) == (3, first)
    assert decision.due is count_only
    assert compaction_trigger(t.table(), _trigger(strategy), later).due is both


@pytest.mark.parametrize("timeline,writers", [("LOCAL", "Asia/Shanghai"), ("UTC", "UTC")])
@pytest.mark.parametrize("ago,due", [(timedelta(minutes=30), False), (timedelta(hours=2), True)])
def test_a_time_elapsed_trigger_counts_in_the_writers_zone(tmp_path, timeline, writers, ago, due):
    """Writers in Shanghai on a LOCAL table (TMS told so): delta commits written 30 minutes ago are not an hour
    old, written 2 hours ago they are; and the compaction TMS plans comes after them on the timeline. Read as
    UTC times they would be 8 hours ahead: never due, and a plan would go before them."""
    t = ModelledTable(tmp_path / "t", context=told_writers_zone("Asia/Shanghai"))
    set_timeline_zone(t, timeline)
    writer = writes_in(t, writers)
    writer.ago = ago
    deltas = [t.write([rec(i, 10) for i in range(9)], "insert")]
    writer.ago = ago - timedelta(minutes=1)
    deltas.append(t.write([rec(0, 20)]))
    hourly = _trigger(TriggerStrategy.TIME_ELAPSED)
    at = now()
    assert compaction_trigger(t.table(), hourly, at).due is due
    digest = TimelineDigest.of(t.table(), None, at, frozenset({"compaction"}))
    assert digest.compaction_may_be_due(hourly, at) is due
    assert (digest.compaction_due_since(hourly) <= at) is due
    planned = plan_compaction(t.table(), hourly, at)
    assert (planned is not None) is due
    if planned is not None:
        assert planned.instant > max(deltas)


def test_delta_commits_are_counted_since_the_last_completed_compaction(tmp_path):
    t = _table(tmp_path)
    t.write([rec(0, 20)])
    every = policy(hoodie__compact__inline__max__delta__commits=2)
    tc = plan_compaction(t.table(), every, now()).instant
    assert compaction_trigger(t.table(), every, now()).commits == 2, "a pending compaction resets nothing"
    run_compaction(t.table(), tc)
    decision = compaction_trigger(t.table(), every, now())
    assert (decision.commits, decision.since, decision.due) == (0, tc, False)
    t.write([rec(1, 30)])
    t.write([rec(2, 30)])
    assert compaction_trigger(t.table(), every, now()).due
    t.check()


def test_plan_reads_back_as_hudi_writes_it(tmp_path):
    t = _table(tmp_path)
    t.write([rec(i, 20) for i in range(0, 9, 2)])
    planned = plan_compaction(t.table(), policy(hoodie__compact__inline__max__delta__commits=1), now())
    table = t.table()
    requested = table.timeline.get(planned.instant)
    assert (requested.action, requested.state.name) == ("compaction", "REQUESTED")
    plan = parse_compaction_plan(table.timeline.read_plan(planned.instant))
    assert plan.version == 2 and plan.strategy is None and plan.extra_metadata == {}
    view_slices = {(fs.partition, fs.file_id): fs for fs in table.file_system_view().merged_latest_slices()}
    assert len(plan.operations) == 3
    for op in plan.operations:
        fs = view_slices[(op.partition_path, op.file_id)]
        assert op.base_instant_time == fs.base_instant and op.data_file_path == fs.base_file.file_name
        assert op.delta_file_paths == [f.file_name for f in fs.log_files]
        assert op.metrics == capture_metrics(fs.base_file.size, [f.size for f in fs.log_files], 120 * MB)
    sizes = sorted((fs.total_bytes for fs in view_slices.values()), reverse=True)
    assert planned.stats == plan_stats(table, planned.instant)
    assert sorted(planned.stats.operation_bytes, reverse=True) == sizes
    assert planned.stats.largest_file_group_bytes == sizes[0] and planned.stats.operations == 3
    assert planned.stats.within_budget, "Parquet file groups are merged within the job's memory budget"


def test_nothing_to_compact_and_file_groups_never_planned_twice(tmp_path):
    t = _table(tmp_path)
    every = policy(hoodie__compact__inline__max__delta__commits=1, tms__compaction__plan__while__pending=True)
    assert plan_compaction(t.table(), every, now()) is None, "no log files yet"
    t.write([rec(0, 20)])
    first = plan_compaction(t.table(), every, now())
    assert first.stats.operations == 1
    t.write([rec(1, 20)])
    second = plan_compaction(t.table(), every, now())
    ops = parse_compaction_plan(t.table().timeline.read_plan(second.instant)).operations
    assert [op.partition_path for op in ops] == ["city=nyc"], "sf is in the first plan; only nyc is new"
    assert plan_compaction(t.table(), every, now()) is None


def test_an_instant_time_a_writer_took_meanwhile_is_planned_again_at_a_later_one(tmp_path):
    """A writer without the table's lock took the planner's instant time (the same millisecond): the compaction
    is planned at a later time at once, not left for the next event."""
    t = _table(tmp_path, version=8)
    t.write([rec(0, 20)])
    taken = t.write([rec(1, 30)], leave_inflight=True)  # the writer's instant time, given to the planner first
    table = t.table()
    real = table.timeline.new_instant_time
    times = iter([taken])
    table.timeline.new_instant_time = lambda: next(times, None) or real()  # type: ignore[method-assign]
    planned = plan_compaction(table, policy(hoodie__compact__inline__max__delta__commits=1), now())
    assert planned is not None and planned.instant > taken
    assert [i.timestamp for i in t.table().timeline.pending(("compaction",))] == [planned.instant]


def test_v8_plan_and_refusals(tmp_path):
    t = _table(tmp_path, version=8)
    t.write([rec(0, 20)])
    planned = plan_compaction(t.table(), policy(hoodie__compact__inline__max__delta__commits=1), now())
    assert planned.runnable and planned.stats.operations == 1
    cow = ModelledTable(tmp_path / "cow", table_type="COPY_ON_WRITE")
    with pytest.raises(PlanningError, match="MERGE_ON_READ"):
        plan_compaction(cow.table(), policy(), now())
    props = t.path / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text().replace("EVENT_TIME_ORDERING", "CUSTOM"))
    with pytest.raises(UnsupportedTableError, match="CUSTOM"):  # the capability decision, before planning
        schedule(t.table(), "compaction", policy(), now())


def _op(partition, log_sizes, base=10 * MB):
    return CompactionOperation(base_instant_time="1", file_id=f"{partition}-{len(log_sizes)}-{sum(log_sizes)}",
                               partition_path=partition, data_file_path="b.parquet" if base is not None else None,
                               delta_file_paths=[f".f_1.log.{n}_0-0-0" for n in range(1, len(log_sizes) + 1)],
                               metrics=capture_metrics(base, log_sizes, 120 * MB))


def test_metrics_are_hudis():
    assert capture_metrics(10 * MB + 5, [MB, MB + 1], 120 * MB) == {
        "TOTAL_IO_READ_MB": 12.0, "TOTAL_IO_WRITE_MB": 10.0, "TOTAL_IO_MB": 22.0,
        "TOTAL_LOG_FILES_SIZE": 2 * MB + 1.0, "TOTAL_LOG_FILES": 2.0}
    assert capture_metrics(None, [3 * MB], 120 * MB)["TOTAL_IO_WRITE_MB"] == 120.0  # no base: a full file


def _strategy(strategy, **options):
    return policy(hoodie__compaction__strategy=strategy.value, **options)


def test_log_file_size_strategy_takes_largest_logs_first_within_target_io():
    ops = [_op("a", [MB]), _op("b", [5 * MB]), _op("c", [3 * MB]), _op("d", [0])]
    chosen = order_and_filter(ops, _strategy(CompactionStrategy.LOG_FILE_SIZE))
    assert [o.partition_path for o in chosen] == ["b", "c", "a", "d"]
    # IO = base + logs read, base written: b takes 25 MB of a 26 MB budget, c (23 MB) spends the rest.
    bounded = order_and_filter(ops, _strategy(CompactionStrategy.LOG_FILE_SIZE, hoodie__compaction__target__io=26))
    assert [o.partition_path for o in bounded] == ["b", "c"]
    threshold = _strategy(CompactionStrategy.LOG_FILE_SIZE, hoodie__compaction__logfile__size__threshold=2 * MB)
    assert [o.partition_path for o in order_and_filter(ops, threshold)] == ["b", "c"]


def _sorted_and_bounded(ops, pol):
    """The strategies as Hudi's CompactionStrategy.orderAndFilter reads: filter, a stable sort, then the operations in
    order while the target IO lasts (the one that spends it still taken)."""
    if pol.compaction_strategy is CompactionStrategy.LOG_FILE_SIZE:
        ops = sorted((o for o in ops if o.metrics["TOTAL_LOG_FILES_SIZE"] >= pol.compaction_log_file_size_threshold),
                     key=lambda o: -o.metrics["TOTAL_LOG_FILES_SIZE"])
    elif pol.compaction_strategy is CompactionStrategy.LOG_FILE_NUM:
        ops = sorted((o for o in ops if len(o.delta_file_paths) >= pol.compaction_log_file_num_threshold),
                     key=lambda o: -len(o.delta_file_paths))
    taken, left = [], pol.compaction_target_io_mb
    for op in ops:
        taken.append(op)
        left -= int(op.metrics["TOTAL_IO_MB"])
        if left <= 0:
            break
    return taken


@given(slices=st.lists(st.tuples(st.sampled_from("abcd"), st.lists(st.sampled_from([0, MB // 2, MB, 3 * MB]),
                                                                    min_size=1, max_size=3),
                                 st.sampled_from([None, 0, MB, 4 * MB])), max_size=30),
       strategy=st.sampled_from([CompactionStrategy.LOG_FILE_SIZE, CompactionStrategy.LOG_FILE_NUM,
                                 CompactionStrategy.BOUNDED_IO]),
       target_io=st.integers(1, 200), size_threshold=st.sampled_from([0, MB]), num_threshold=st.integers(0, 2))
def test_the_choice_made_as_operations_come_is_the_sorted_and_bounded_one(slices, strategy, target_io,
                                                                        size_threshold, num_threshold):
    """A full pass offers its operations one by one and keeps only those the target IO may still reach (a giant
    table's pass holds about its plan): the same operations, in the same order, as sorting them all and taking them
    while the target IO lasts; ties (equal log bytes) keep the plan's order."""
    ops = [_op(partition, logs, base) for partition, logs, base in slices]
    pol = _strategy(strategy, hoodie__compaction__target__io=target_io,
                    hoodie__compaction__logfile__size__threshold=size_threshold,
                    hoodie__compaction__logfile__num__threshold=num_threshold)
    chosen = order_and_filter(ops, pol)
    assert [id(o) for o in chosen] == [id(o) for o in _sorted_and_bounded(ops, pol)]


def test_bounded_unbounded_log_count_and_day_based_strategies():
    ops = [_op("2024/01/01", [MB]), _op("2024/01/03", [MB, MB, MB]), _op("2024/01/02", [MB, MB])]
    assert order_and_filter(ops, _strategy(CompactionStrategy.UNBOUNDED)) == ops
    bounded = order_and_filter(ops, _strategy(CompactionStrategy.BOUNDED_IO, hoodie__compaction__target__io=30))
    assert bounded == ops[:2], "in plan order, until the budget is spent"
    by_count = order_and_filter(ops, _strategy(CompactionStrategy.LOG_FILE_NUM,
                                               hoodie__compaction__logfile__num__threshold=2))
    assert [o.partition_path for o in by_count] == ["2024/01/03", "2024/01/02"]
    newest = order_and_filter(ops, _strategy(CompactionStrategy.DAY_BASED,
                                             hoodie__compaction__daybased__target__partitions=2))
    assert [o.partition_path for o in newest] == ["2024/01/03", "2024/01/02"]


def test_day_based_strategy_plans_the_newest_partitions(tmp_path):
    t = _table(tmp_path)
    t.write([rec(i, 20) for i in range(3)])
    planned = plan_compaction(t.table(), _strategy(CompactionStrategy.DAY_BASED,
                                                   hoodie__compact__inline__max__delta__commits=1,
                                                   hoodie__compaction__daybased__target__partitions=2), now())
    ops = parse_compaction_plan(t.table().timeline.read_plan(planned.instant)).operations
    assert [op.partition_path for op in ops] == ["city=sp", "city=sf"]


def test_a_plan_waiting_for_a_worker_holds_back_the_next_one(tmp_path):
    """The backlog cannot grow faster than workers serve it: no second plan while the first waits, unless
    the policy asks for one; once the first runs, the next is planned."""
    t = _table(tmp_path)
    every = policy(hoodie__compact__inline__max__delta__commits=1)
    t.write([rec(0, 20)])
    first = plan_compaction(t.table(), every, now())
    t.write([rec(1, 20)])
    decision = compaction_trigger(t.table(), every, now())
    assert not decision.due and decision.waiting_for == (first.instant,) and decision.commits == 3
    assert plan_compaction(t.table(), every, now()) is None
    eager = policy(hoodie__compact__inline__max__delta__commits=1, tms__compaction__plan__while__pending=True)
    assert compaction_trigger(t.table(), eager, now()).due
    tl = t.table().timeline
    tl.transition_to_inflight(tl.states_of(first.instant)[State.REQUESTED])  # a worker started it
    t.write([rec(2, 20)])
    assert compaction_trigger(t.table(), every, now()).due


def test_num_commits_after_last_request_counts_from_the_pending_plan(tmp_path):
    t = _table(tmp_path)
    after_request = policy(hoodie__compact__inline__trigger__strategy="NUM_COMMITS_AFTER_LAST_REQUEST",
                           hoodie__compact__inline__max__delta__commits=2,
                           tms__compaction__plan__while__pending=True)
    plain = policy(hoodie__compact__inline__max__delta__commits=2, tms__compaction__plan__while__pending=True)
    t.write([rec(0, 20)])
    tc = plan_compaction(t.table(), after_request, now()).instant
    t.write([rec(1, 20)])
    counted = compaction_trigger(t.table(), after_request, now())
    assert (counted.since, counted.commits, counted.due) == (tc, 1, False)
    assert compaction_trigger(t.table(), plain, now()).due, "NUM_COMMITS counts from the last completed one"
    t.write([rec(2, 20)])
    assert compaction_trigger(t.table(), after_request, now()).due
