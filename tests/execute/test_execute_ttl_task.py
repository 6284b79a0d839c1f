"""A TTL task (tms.execute.ttl_task) as the workers run it: the instant it writes names the task, so that a retry
after a lost attempt rolls back what that attempt left pending and writes the deletes once, and a retry after an
attempt that completed (but could not report it) writes nothing and reports that instant. Rows read back by
hudi-rs; the clock is the plan's, injected."""
from datetime import UTC, datetime

import pytest
from support import hudi_rs_table, rows

from tms.execute.errors import FencingError
from tms.execute.ttl_task import TASK_KEY, run_ttl_task
from tms.hudi.metadata.init import create_metadata_table
from tms.hudi.metadata.reader import MetadataTable
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.writer import create_table_for_records
from tms.hudi.timeline.instant import Action, State
from tms.table_service import TableService
from tms.task_payload import TtlRequest

NOW = datetime(2024, 2, 1, tzinfo=UTC)
RECORD_TTL = TtlRequest(policy={"tms.ttl.field": "event_ms", "tms.ttl.days": 5}, now=NOW.isoformat())
PARTITION_TTL = TtlRequest(policy={"hoodie.partition.ttl.days.retain": 2},
                           now=datetime(2024, 1, 14, tzinfo=UTC).isoformat())
TASK = "20260101000000000"  # the task's request instant


def _event_ms(day: int) -> int:
    return int(datetime(2024, 1, day, tzinfo=UTC).timestamp() * 1000)


def _ids(path) -> list[int]:
    return sorted(r["id"] for r in rows(hudi_rs_table(path), ["id"]))


def _lost_at(call: int):
    """A fence that holds `call - 1` times, then says the lease is lost."""
    calls = []

    def fence() -> None:
        calls.append(1)
        if len(calls) >= call:
            raise FencingError("lease lost")
    return fence


def _with_marker(path, action: str) -> list[tuple[str, str]]:
    """(instant, state) of the timeline's instants of `action` that name the task."""
    tl = HudiTable.load(str(path)).timeline
    out = []
    for i in tl.instants():
        if i.action == action and i.is_completed and TASK_KEY in (tl.commit_metadata(i).extra_metadata or {}):
            out.append((i.timestamp, "completed"))
    out += [(i.timestamp, "pending") for i in tl.pending([action])]
    return out


def test_a_record_ttl_retry_rolls_back_the_lost_attempt_and_deletes_once(tmp_path):
    path = tmp_path / "t"
    records = [{"id": i, "seq": 1, "city": "ab"[i % 2], "event_ms": _event_ms(20 + i % 12)} for i in range(24)]
    writer = create_table_for_records(str(path), records, table_type="MERGE_ON_READ", version=8, key=["id"],
                                      ordering=["seq"], partition=["city"])
    create_metadata_table(writer.table, ["files", "record_index"])
    writer.write(records)
    kept = [r["id"] for r in records if r["event_ms"] >= _event_ms(27)]

    # The first attempt's lease is lost before its commit (the fence at the writer's second transaction).
    with pytest.raises(FencingError):
        run_ttl_task(TableService.TTL, str(path), TASK, RECORD_TTL, fence=_lost_at(2))
    [(lost, state)] = _with_marker(path, Action.DELTA_COMMIT)
    assert state == "pending"
    assert _ids(path) == list(range(24))  # nothing deleted yet

    retry = run_ttl_task(TableService.TTL, str(path), TASK, RECORD_TTL)
    assert retry.rolled_back == (lost,) and retry.instant and not retry.resumed
    assert retry.records == 24 - len(kept)
    assert _ids(path) == sorted(kept)
    assert _with_marker(path, Action.DELTA_COMMIT) == [(retry.instant, "completed")]
    assert HudiTable.load(str(path)).timeline.states_of(lost) == {}  # rolled back, off the timeline
    assert sorted(int(k) for k in MetadataTable(HudiTable.load(str(path))).records("record_index")) == sorted(kept)

    # The attempt completed but its result was not recorded: the next one reports it and writes nothing.
    again = run_ttl_task(TableService.TTL, str(path), TASK, RECORD_TTL)
    assert (again.instant, again.resumed, again.records) == (retry.instant, True, retry.records)
    assert _with_marker(path, Action.DELTA_COMMIT) == [(retry.instant, "completed")]
    # Another task (another request) finds nothing more expired at the same clock.
    other = run_ttl_task(TableService.TTL, str(path), "20260102000000000", RECORD_TTL)
    assert other.instant is None and "nothing had expired" in other.summary()


def test_a_partition_ttl_retry_rolls_back_a_pending_delete_partition(tmp_path, monkeypatch):
    path = tmp_path / "t"
    jan_10 = _event_ms(10)
    events = [{"id": i, "seq": 1, "ts": jan_10 + (i % 4) * 86_400_000} for i in range(12)]  # days 10..13
    writer = create_table_for_records(str(path), events, table_type="COPY_ON_WRITE", version=8, key=["id"],
                                      ordering=["seq"], partition=["ts"], partition_time_format="yyyy-MM-dd")
    create_metadata_table(writer.table, ["files"])
    writer.write(events)

    import tms.execute.partition_delete as partition_delete

    def crash(*_args, **_kwargs):
        raise OSError("the worker died")
    with monkeypatch.context() as m:  # the attempt dies after its inflight replacecommit, before the MDT commit
        m.setattr(partition_delete, "write_metadata_commit", crash)
        with pytest.raises(OSError):
            run_ttl_task(TableService.PARTITION_TTL, str(path), TASK, PARTITION_TTL)
    [(lost, state)] = _with_marker(path, Action.REPLACE_COMMIT)
    assert state == "pending"
    assert HudiTable.load(str(path)).timeline.states_of(lost).keys() == {State.REQUESTED, State.INFLIGHT}

    retry = run_ttl_task(TableService.PARTITION_TTL, str(path), TASK, PARTITION_TTL)
    assert retry.rolled_back == (lost,) and retry.partitions == ("ts=2024-01-10", "ts=2024-01-11")
    assert _ids(path) == [i for i in range(12) if i % 4 in (2, 3)]
    assert _with_marker(path, Action.REPLACE_COMMIT) == [(retry.instant, "completed")]
    assert MetadataTable(HudiTable.load(str(path))).all_partitions() == ["ts=2024-01-12", "ts=2024-01-13"]
    again = run_ttl_task(TableService.PARTITION_TTL, str(path), TASK, PARTITION_TTL)
    assert (again.instant, again.resumed, again.partitions) == (retry.instant, True, retry.partitions)
