"""Instant times under the lock (Hudi's TrueTime): the clock is read, then the maximum expected clock skew is
waited out while the lock is held; a time is always later than every instant and completion time on the
timeline, so a slow clock never makes times go back; transactions install the table's generator."""
from __future__ import annotations

from datetime import UTC

from concurrency_support import create_table, fs_lock_options

from tms.hudi.locks import TransactionManager, parse_concurrency_options
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant_time import TimeGenerator, later_than


def test_the_clock_is_read_before_waiting_out_the_skew():
    events = []
    generator = TimeGenerator(200, clock=lambda: events.append("clock") or 1_700_000_000.123,
                              sleep=lambda s: events.append(("sleep", s)))
    assert generator.next_time(UTC) == "20231114221320123"
    assert events == ["clock", ("sleep", 0.2)]


def test_a_slow_clock_never_goes_back_past_the_timeline():
    slow = TimeGenerator(0, clock=lambda: 1_000_000_000.0)  # 2001
    assert slow.next_time(UTC, "20250101000059999") == "20250101000100000"  # carries into the next minute
    assert later_than("20251231235959999") == "20260101000000000"
    assert later_than("20250101120000") == "20250101120000001"       # second precision counts as .000
    assert later_than("00000000000000") == "00000000000001"           # not a calendar time


def test_transactions_generate_times_with_the_tables_skew_and_restore_the_default(tmp_path):
    path = tmp_path / "t"
    create_table(path)
    table = HudiTable.load(str(path))
    options = {**fs_lock_options(tmp_path), "hoodie.time.generator.max_expected_clock_skew_ms": "150"}
    config = parse_concurrency_options(options, base_path=str(path), table_name=table.name)
    slept = []
    with TransactionManager(table, config) as transactions:
        transactions.time_generator = TimeGenerator(150, sleep=slept.append)
        default = table.timeline.time_generator
        with transactions.transaction() as timeline:
            assert (tmp_path / "lock" / "lock").exists()  # the file-system lock is held
            assert timeline.time_generator is transactions.time_generator
            with transactions.transaction():  # nested: the lock is taken once
                first = timeline.new_instant_time()
            second = timeline.new_instant_time()
        assert not (tmp_path / "lock" / "lock").exists()
        assert table.timeline.time_generator is default
    assert slept == [0.15, 0.15] and first < second
    assert first > max(i.completion_time for i in table.timeline.instants() if i.completion_time)


def test_without_a_lock_provider_times_stay_monotonic_without_waiting(tmp_path):
    path = tmp_path / "t"
    create_table(path)
    table = HudiTable.load(str(path))
    with TransactionManager.single_writer(table) as transactions:
        assert not transactions.takes_lock and transactions.time_generator.max_clock_skew_ms == 0
        times = [transactions.new_instant_time() for _ in range(50)]
    assert times == sorted(times) and len(set(times)) == 50
