"""Create-once files on object stores (S3 on the moto server, Azure Blob storage on Azurite, both on loopback):
two processes racing to create the same instant file, exactly one wins every race and the other is told
InstantConflictError; the file is the winner's. On GCS, with no conditional create, they are refused."""
from __future__ import annotations

import multiprocessing as mp

import pytest

RACES = 100


def _instant_file(race: int) -> str:
    """What Timeline.create_requested writes for a compaction plan of a v8 table."""
    from tms.hudi.timeline.instant import Instant, State, instant_file_name
    return ".hoodie/timeline/" + instant_file_name(Instant(f"2026{race:013d}", State.REQUESTED, "compaction"), 8)


def _racer(base_path: str, name: str, barrier, results) -> None:
    from tms.hudi.errors import InstantConflictError
    from tms.hudi.storage.table_storage import open_storage

    storage = open_storage(base_path)
    for race in range(RACES):
        barrier.wait()
        try:
            storage.write_atomic(_instant_file(race), f"{name} {race}".encode())
            results.put((race, name, "won"))
        except InstantConflictError:
            results.put((race, name, "conflict"))


@pytest.mark.slow  # ~50 s on a loaded 2-core machine (S3): 200 conditional PUTs through the endpoint
def test_two_processes_racing_for_one_instant_file_exactly_one_wins_each_race(store_base):
    from tms.hudi.storage.table_storage import open_storage

    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    racers = [ctx.Process(target=_racer, args=(store_base, name, barrier, results)) for name in ("a", "b")]
    for p in racers:
        p.start()
    outcomes = [results.get(timeout=300) for _ in range(2 * RACES)]
    for p in racers:
        p.join(timeout=60)
        assert p.exitcode == 0
    winners = {race: [name for r, name, outcome in outcomes if r == race and outcome == "won"]
               for race in range(RACES)}
    assert {race: len(names) for race, names in winners.items()} == dict.fromkeys(range(RACES), 1)
    storage = open_storage(store_base)
    for race, [name] in winners.items():
        assert storage.read_bytes(_instant_file(race)) == f"{name} {race}".encode(), "the file is the winner's"


def test_a_new_data_file_is_never_written_over_an_existing_one(store_base):
    from tms.hudi.errors import InstantConflictError
    from tms.hudi.storage.table_storage import open_storage

    storage = open_storage(store_base)
    storage.write_new("p/f1.parquet", b"first")
    with pytest.raises(InstantConflictError):
        storage.write_new("p/f1.parquet", b"second")
    with pytest.raises(InstantConflictError), storage.open_new("p/f1.parquet") as fh:  # decided on completion
        fh.write(b"streamed")
    with storage.open_new("p/f2.parquet") as fh:
        fh.write(b"streamed")
    assert (storage.read_bytes("p/f1.parquet"), storage.read_bytes("p/f2.parquet")) == (b"first", b"streamed")


def test_create_once_files_on_gcs_are_refused_in_one_line_before_anything_is_written():
    from tms.hudi.errors import UnsupportedStorageError
    from tms.hudi.storage.table_storage import open_storage

    storage = open_storage("gs://tms-lake/t", {"token": "anon"})  # no request is made: refused before any
    for create in (lambda: storage.write_atomic(".hoodie/timeline/1.commit", b"{}"),
                   lambda: storage.write_new("p/f1.parquet", b"data"), lambda: storage.open_new("p/f2.parquet")):
        with pytest.raises(UnsupportedStorageError, match="no conditional create"):
            create()
