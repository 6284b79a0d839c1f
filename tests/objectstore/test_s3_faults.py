"""Faults of an S3 store (a fault-injecting proxy on loopback in front of the moto server), per kind: throttling
(503 SlowDown), a transient 500, a request that times out and a connection reset mid-upload are retried with
backoff and the write lands whole, once; a store that keeps failing leaves nothing half-written visible, and
the caller is told in one line that the store could not be reached."""
from __future__ import annotations

import json

import pytest
from fault_proxy import FaultProxy
from table_model import ModelledTable, rec

from tms.config import load_settings
from tms.hudi.errors import InstantConflictError, StorageUnavailableError
from tms.hudi.storage.table_storage import open_storage
from tms.table_context import table_context

INSTANT = ".hoodie/timeline/20260101000000000.commit.requested"


@pytest.fixture
def proxy(s3_endpoint):
    proxy = FaultProxy.start(s3_endpoint.url)
    yield proxy
    proxy.stop()


def _storage(proxy: FaultProxy, base: str, **config):
    """The table's storage reached through the proxy (a read timeout of 1 s: the proxy holds a timed-out
    request for 3 s)."""
    return open_storage(base, {"endpoint_url": proxy.url, "config_kwargs": {"read_timeout": 1, **config}})


@pytest.mark.parametrize("kind", ["slowdown", "error500", "timeout"])
def test_a_create_once_file_is_retried_through_a_transient_fault_and_lands_once(proxy, s3_base, s3_endpoint, kind):
    storage = _storage(proxy, s3_base)
    proxy.fail(kind, method="PUT", path_contains="commit.requested", times=2)
    storage.write_atomic(INSTANT, b"plan")
    assert proxy.injected(kind) == 2, "both faults were met, and the write retried past them"
    assert storage.read_bytes(INSTANT) == b"plan"
    with pytest.raises(InstantConflictError):  # the retries made one object, still created once
        storage.write_atomic(INSTANT, b"another")
    assert s3_endpoint.keys(s3_endpoint.key(s3_base)) == [f"{s3_endpoint.key(s3_base)}/{INSTANT}"]


@pytest.mark.parametrize("kind", ["slowdown", "error500", "timeout"])
def test_reads_and_listings_are_retried_through_a_transient_fault(proxy, s3_base, kind):
    storage = _storage(proxy, s3_base)
    storage.write_atomic(INSTANT, b"plan")
    proxy.fail(kind, method="GET", times=2)
    assert storage.read_bytes(INSTANT) == b"plan"
    proxy.fail(kind, method="GET", times=2)
    assert [f.name for f in storage.listdir(".hoodie/timeline")] == [INSTANT.rsplit("/", 1)[1]]
    assert proxy.injected(kind) == 4


def test_an_upload_reset_mid_way_is_retried_and_the_object_is_whole(proxy, s3_base):
    storage = _storage(proxy, s3_base)
    data = bytes(range(256)) * 4096  # 1 MiB, one PUT
    proxy.fail("reset", method="PUT", path_contains="f1.parquet", times=2)
    storage.write_new("p/f1.parquet", data)
    assert proxy.injected("reset") == 2
    assert storage.read_bytes("p/f1.parquet") == data

    streamed = bytes(range(256)) * 32768  # 8 MiB streamed through open_new: one conditional PUT at close
    proxy.fail("reset", method="PUT", path_contains="f2.parquet", times=1)
    with storage.open_new("p/f2.parquet") as fh:
        for i in range(0, len(streamed), 1 << 20):
            fh.write(streamed[i:i + (1 << 20)])
    assert proxy.injected("reset") == 3
    assert storage.read_bytes("p/f2.parquet") == streamed


@pytest.mark.parametrize("kind", [pytest.param("slowdown", marks=pytest.mark.slow),  # ~20 s of backoff
                                  "error500", "reset"])
def test_a_store_that_keeps_failing_leaves_nothing_half_written_and_says_so_in_one_line(
        proxy, s3_base, s3_endpoint, kind):
    storage = _storage(proxy, s3_base, retries={"max_attempts": 2})
    proxy.fail(kind, method="PUT", times=1000)
    with pytest.raises(StorageUnavailableError, match=f"cannot reach the store of {s3_base}") as failed:
        storage.write_atomic(INSTANT, b"x" * 100_000)
    assert "\n" not in str(failed.value)
    with pytest.raises(StorageUnavailableError):
        storage.write_new("p/f1.parquet", b"x" * 100_000)
    assert s3_endpoint.keys(s3_endpoint.key(s3_base)) == [], "nothing half-written is visible"


@pytest.mark.slow  # ~40 s: a table's writes and reads with every 8th request failing
def test_a_tables_commits_through_a_failing_store_lose_nothing(proxy, s3_base, s3_endpoint, monkeypatch):
    root = f"s3://{s3_endpoint.bucket}"
    monkeypatch.setenv("TMS_STORAGE_ROOTS", root)
    monkeypatch.setenv("TMS_STORAGE_ROOT_OPTIONS", json.dumps({root: {"endpoint": proxy.url}}))
    context = table_context(load_settings())  # the root's options, as TMS passes them to the library
    for kind in ("slowdown", "error500", "reset"):  # the three faults, in turn, every 8th request
        proxy.fail(kind, times=10_000, every=8)
    t = ModelledTable(f"{s3_base}/t", version=8, context=context)
    t.write([rec(i, 10) for i in range(12)], "insert")
    t.write([rec(i, 20) for i in range(0, 12, 3)])
    t.write([rec(5, 40)], "delete")
    assert all(proxy.injected(k) for k in ("slowdown", "error500", "reset"))
    proxy.clear()
    t.check()  # TMS's reader (through the proxy) and hudi-rs (straight to the endpoint) read the model's rows


def test_a_create_whose_answer_was_lost_is_known_as_the_writers_own_on_retry_not_a_conflict(proxy, s3_base):
    storage = _storage(proxy, s3_base)
    proxy.fail("lost_answer", method="PUT", path_contains="commit.requested", times=1)
    storage.write_atomic(INSTANT, b"plan")  # the retry meets the object its first attempt made: its own
    assert proxy.injected("lost_answer") == 1
    assert storage.read_bytes(INSTANT) == b"plan"
    with pytest.raises(InstantConflictError):  # another writer's create still loses
        storage.write_atomic(INSTANT, b"plan")
