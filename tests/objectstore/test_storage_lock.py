"""Hudi 1.1's storage-based lock on object stores (S3 on moto, Azure Blob storage on Azurite): the lock file
`<base>/.hoodie/.locks/table_lock.json` holds Hudi's JSON and is changed only by conditional writes (If-Match
with the version read, If-None-Match to create), so of two writers from one version exactly one wins, a
holder's heartbeat renews it, release expires it, and a dead holder's lock is taken over."""
from __future__ import annotations

import json
import threading
import time

import pytest

from tms.hudi.locks.config import STORAGE, parse_concurrency_options
from tms.hudi.locks.lock_manager import open_lock_provider
from tms.hudi.locks.provider import LockError
from tms.hudi.locks.storage_based import StorageLockData, StorageLockFile
from tms.hudi.storage.table_storage import open_storage

LOCK = ".hoodie/.locks/table_lock.json"
OPTIONS = {"hoodie.write.lock.provider": STORAGE, "hoodie.write.lock.storage.validity.timeout.secs": "10",
           "hoodie.write.lock.storage.heartbeat.poll.secs": "1"}


def provider(base: str):
    return open_lock_provider(parse_concurrency_options(OPTIONS, base_path=base, table_name="t"))


def lock_json(base: str) -> dict:
    return json.loads(open_storage(base).read_bytes(LOCK))


def test_one_holder_at_a_time_renewed_expired_on_release_and_free_after(store_base):
    first, second = provider(store_base), provider(store_base)
    assert first.try_lock(1)
    held = lock_json(store_base)
    assert set(held) == {"expired", "validUntil", "owner"} and held["expired"] is False
    assert held["validUntil"] > time.time() * 1000 + 8000
    assert not second.try_lock(1.5), "a second provider took a held lock"
    time.sleep(1.5)  # heartbeat.poll.secs=1: renewed meanwhile, by a conditional write on the version it holds
    renewed = lock_json(store_base)
    assert renewed["owner"] == held["owner"] and renewed["validUntil"] > held["validUntil"]
    first.unlock()
    released = StorageLockData.from_json(open_storage(store_base).read_bytes(LOCK))
    assert released.expired and released.owner == held["owner"]
    assert second.try_lock(1), "an expired lock is free at once"
    assert lock_json(store_base)["owner"] != held["owner"]
    second.close()


def test_a_dead_holders_lock_is_taken_over_and_the_dead_holder_cannot_renew_it(store_base):
    dead = provider(store_base)
    assert dead.try_lock(1)
    dead._stop_heartbeat()  # the holder dies: no more renewals
    owner = lock_json(store_base)["owner"]
    # its validity ran out (written as Hudi would find it: validUntil in the past)
    store = StorageLockFile(f"{store_base}/{LOCK}")
    current = store.read()
    assert current is not None
    assert store.write_if(StorageLockData(False, int(time.time() * 1000) - 1000, owner), current) is not None
    taker = provider(store_base)
    assert taker.try_lock(2)
    assert lock_json(store_base)["owner"] != owner
    assert not dead.renew(), "a holder whose lock was taken renewed it"
    taker.close()


@pytest.mark.parametrize("from_version", [False, True], ids=["create", "replace"])
def test_of_writers_racing_from_one_version_exactly_one_wins(store_base, from_version):
    """20 rounds of 4 threads each writing the lock file from the same version (absent, or the one read)."""
    store = StorageLockFile(f"{store_base}/{LOCK}")
    if from_version:
        assert store.write_if(StorageLockData(True, 0, "first"), None) is not None
    for round_ in range(20):
        if not from_version:
            open_storage(store_base).delete(LOCK)
        expected = store.read() if from_version else None
        assert (expected is not None) == from_version
        won = _race(store, expected, f"writer-{round_}")
        assert len(won) == 1, f"round {round_}: {len(won)} writers won"
        final = store.read()
        assert final is not None and final.data.owner == won[0]
        if not from_version:
            continue
        assert store.write_if(StorageLockData(False, 0, "late"), expected) is None, "a stale version won"


def _race(store: StorageLockFile, expected, name: str, writers: int = 4) -> list[str]:
    """`writers` threads writing the lock file from `expected` at once; the owners whose write won."""
    barrier = threading.Barrier(writers)
    won: list[str] = []

    def race(n: int) -> None:
        data = StorageLockData(False, 0, f"{name}-{n}")
        barrier.wait()
        if store.write_if(data, expected) is not None:
            won.append(data.owner)

    threads = [threading.Thread(target=race, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return won


def test_a_store_without_conditional_writes_is_refused_in_one_line():
    with pytest.raises(LockError, match="S3 and Azure Blob storage only") as raised:
        provider("gs://bucket/table")
    assert "\n" not in str(raised.value)
