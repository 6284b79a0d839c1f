"""The lock providers TMS shares with Java writers: ZooKeeper (Curator's mutex znodes), the file-system lock and
Hudi 1.1's storage-based lock exclude other holders and other processes, and a dead holder's lock is taken
over as Hudi's providers take it over."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from concurrency_support import zk_options
from kazoo.exceptions import LockTimeout

from tms.hudi.locks.config import FILESYSTEM, STORAGE, ZOOKEEPER, LockConfigError, parse_concurrency_options
from tms.hudi.locks.lock_manager import LockManager, open_lock_provider
from tms.hudi.locks.provider import LockError
from tms.hudi.locks.storage_based import StorageLockData
from tms.hudi.locks.zookeeper import SHARED_CLIENTS

CONTENDER = Path(__file__).with_name("lock_contender.py")
CURATOR_NODE = re.compile(r"^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-\d{10}$")
FAST = {"hoodie.write.lock.client.wait_time_ms_between_retry": "20", "hoodie.write.lock.wait_time_ms": "2000"}


def provider_options(kind: str, zookeeper, tmp_path: Path) -> dict[str, str]:
    if kind == "zookeeper":
        return zk_options(zookeeper, f"t{uuid.uuid4().hex[:8]}", **{"hoodie.write.lock.zookeeper.session_timeout_ms":
                                                                   "2000"})
    if kind == "filesystem":
        return {"hoodie.write.lock.provider": FILESYSTEM, "hoodie.write.lock.filesystem.path": str(tmp_path / "locks"),
                "hoodie.write.lock.filesystem.expire": "1"}
    return {"hoodie.write.lock.provider": STORAGE, "hoodie.write.lock.storage.validity.timeout.secs": "10",
            "hoodie.write.lock.storage.heartbeat.poll.secs": "1"}


def config_of(options: dict[str, str], base: Path):
    return parse_concurrency_options(options, base_path=str(base), table_name="t")


# --- ZooKeeper: Curator's znodes -------------------------------------------------------------------------

def test_zookeeper_lock_holds_a_curator_mutex_znode_that_a_kazoo_lock_waits_for(zookeeper, tmp_path):
    config = config_of(zk_options(zookeeper, "trips"), tmp_path)
    provider = open_lock_provider(config)
    other = zookeeper.client()
    try:
        assert provider.try_lock(5)
        children = other.get_children("/hudi/locks/trips")
        assert len(children) == 1 and CURATOR_NODE.match(children[0]), children
        assert other.exists(f"/hudi/locks/trips/{children[0]}").ephemeralOwner != 0
        # A second client holding the same lock the Curator way (kazoo's recipe, told Curator's node name).
        theirs = other.Lock("/hudi/locks/trips", "java-writer", extra_lock_patterns=["-lock-"])
        with pytest.raises(LockTimeout):
            theirs.acquire(timeout=0.5)
        provider.unlock()
        assert theirs.acquire(timeout=5)
        assert not provider.try_lock(0.5)  # now TMS waits for them
        theirs.release()
        assert provider.try_lock(5)
        provider.unlock()
        assert other.get_children("/hudi/locks/trips") == []
    finally:
        provider.close()
        other.stop()


def test_zookeeper_lock_waits_for_a_lower_sequence_node_created_as_curator_creates_it(zookeeper, tmp_path):
    """A Java writer's InterProcessMutex node, created by hand: `_c_<uuid>-lock-` ephemeral sequential."""
    config = config_of(zk_options(zookeeper, "orders"), tmp_path)
    java = zookeeper.client()
    provider = open_lock_provider(config)
    try:
        java.ensure_path("/hudi/locks/orders")
        theirs = java.create(f"/hudi/locks/orders/_c_{uuid.uuid4()}-lock-", b"10.0.0.7", ephemeral=True, sequence=True)
        assert not provider.try_lock(0.5)
        java.delete(theirs)
        assert provider.try_lock(5)
        ours = [c for c in java.get_children("/hudi/locks/orders")]
        assert len(ours) == 1 and CURATOR_NODE.match(ours[0])
        assert int(ours[0][-10:]) > int(theirs[-10:])  # the same sequence counter as the Java node's
    finally:
        provider.close()
        java.stop()


def test_zookeeper_providers_of_one_process_share_one_session_and_still_exclude_each_other(zookeeper, tmp_path):
    """A planner caching many tables keeps one ZooKeeper session per ensemble: the providers of three tables
    share it, two providers of one table still exclude each other, and the session ends with its last user."""
    sessions_before = SHARED_CLIENTS.open_sessions()
    providers = [open_lock_provider(config_of(zk_options(zookeeper, key), tmp_path))
                 for key in ("shared_a", "shared_b", "shared_a")]
    first, other_table, same_table = providers
    try:
        assert SHARED_CLIENTS.open_sessions() == sessions_before + 1
        assert first.client is other_table.client is same_table.client  # type: ignore[attr-defined]
        assert first.try_lock(5) and other_table.try_lock(5)  # different tables: both held
        assert not same_table.try_lock(0.5)  # the same table, the same session: still excluded
        first.close()  # its lock goes with it; the shared session stays up for the others
        assert same_table.try_lock(5)
        assert other_table.describe().startswith("ZooKeeper lock")
    finally:
        for provider in providers:
            provider.close()
    assert SHARED_CLIENTS.open_sessions() == sessions_before


# --- every provider: processes exclude each other; a dead holder's lock is taken over ------------------

PROVIDERS = ["zookeeper", "filesystem", "storage"]


@pytest.mark.parametrize("kind", PROVIDERS)
def test_processes_exclude_each_other(kind, zookeeper, tmp_path):
    options = {**provider_options(kind, zookeeper, tmp_path), **FAST}
    log = tmp_path / "holds.log"
    procs = [subprocess.Popen([sys.executable, str(CONTENDER), "--base", str(tmp_path), "--options",
                               json.dumps(options), "--log", str(log), "--rounds", "8", "--hold-ms", "15"])
             for _ in range(3)]
    for p in procs:
        assert p.wait(120) == 0
    lines = log.read_text().splitlines()
    assert len(lines) == 3 * 8 * 2
    for acquire, release in zip(lines[::2], lines[1::2], strict=True):
        assert acquire.startswith("acquire ") and release == "release " + acquire.split()[1], lines
    assert len({line.split()[1] for line in lines}) == 3


def _start_holder(options: dict[str, str], base: Path) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, str(CONTENDER), "--base", str(base), "--options", json.dumps(options),
                               "--hold-forever"], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


@pytest.mark.parametrize("kind", PROVIDERS)
def test_the_lock_of_a_killed_holder_is_taken_over(kind, zookeeper, tmp_path):
    options = {**provider_options(kind, zookeeper, tmp_path), **FAST}
    holder = _start_holder(options, tmp_path)
    provider = open_lock_provider(config_of(options, tmp_path))
    try:
        assert not provider.try_lock(0.3)  # held by a live process
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        if kind == "filesystem":
            # Hudi's file-system lock expires by the lock file's age (whole minutes): age it past the expiry.
            lock_file = tmp_path / "locks" / "lock"
            old = time.time() - 61
            os.utime(lock_file, (old, old))
        started = time.monotonic()
        assert provider.try_lock(30), provider.describe()
        waited = time.monotonic() - started
        # ZooKeeper: the dead session's ephemeral node goes with the session (2 s); storage: validUntil (10 s).
        assert waited < {"zookeeper": 10, "filesystem": 1, "storage": 15}[kind]
        if kind == "storage":
            assert waited > 5  # not before the dead holder's validity ran out
    finally:
        provider.close()


def test_file_system_lock_without_expiry_is_never_taken_over(tmp_path):
    options = {**provider_options("filesystem", None, tmp_path), "hoodie.write.lock.filesystem.expire": "0"}
    holder = _start_holder(options, tmp_path)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    old = time.time() - 3600
    os.utime(tmp_path / "locks" / "lock", (old, old))
    provider = open_lock_provider(config_of(options, tmp_path))
    assert not provider.try_lock(0.2)
    assert json.loads((tmp_path / "locks" / "lock").read_text())["lockThreadName"]  # Hudi's LockInfo


def test_storage_lock_file_is_hudis_json_renewed_by_heartbeat_and_expired_on_release(tmp_path):
    options = {**provider_options("storage", None, tmp_path)}
    provider = open_lock_provider(config_of(options, tmp_path))
    lock_file = tmp_path / ".hoodie" / ".locks" / "table_lock.json"
    assert provider.try_lock(1)
    first = json.loads(lock_file.read_text())
    assert set(first) == {"expired", "validUntil", "owner"} and first["expired"] is False
    assert first["validUntil"] > time.time() * 1000 + 8000
    time.sleep(2.5)  # heartbeat.poll.secs=1: renewed meanwhile
    renewed = json.loads(lock_file.read_text())
    assert renewed["owner"] == first["owner"] and renewed["validUntil"] > first["validUntil"]
    provider.unlock()
    released = StorageLockData.from_json(lock_file.read_bytes())
    assert released.expired and released.owner == first["owner"]
    other = open_lock_provider(config_of(options, tmp_path))
    assert other.try_lock(1)  # an expired lock is free at once
    other.close()


# --- Hudi's lock manager: retries and the error -----------------------------------------------------------

def test_lock_manager_honours_wait_time_and_retries_then_names_the_holder(tmp_path):
    options = {**provider_options("filesystem", None, tmp_path), "hoodie.write.lock.wait_time_ms": "100",
               "hoodie.write.lock.client.num_retries": "2",
               "hoodie.write.lock.client.wait_time_ms_between_retry": "100"}
    holder = open_lock_provider(config_of(options, tmp_path))
    assert holder.try_lock(1)
    manager = LockManager(config_of(options, tmp_path))
    started = time.monotonic()
    with pytest.raises(LockError, match=r"after 3 attempt\(s\): file-system lock .*/locks/lock, held by tms-"):
        manager.lock()
    assert 0.45 < time.monotonic() - started < 3  # 3 x 100 ms attempts + 2 x 100 ms between them
    holder.unlock()
    manager.lock()
    manager.unlock()


class FlakyProvider:
    """A provider whose first attempts fail with an error (a lost connection), then take the lock."""

    def __init__(self, failures: int):
        self.failures = failures
        self.attempts = 0

    def try_lock(self, timeout_s: float) -> bool:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise LockError("connection to ZooKeeper lost")
        return True

    def unlock(self) -> None:
        pass

    def close(self) -> None:
        pass

    def describe(self) -> str:
        return "flaky lock"


def test_lock_manager_retries_attempts_that_fail_with_an_error(tmp_path):
    options = {**provider_options("filesystem", None, tmp_path), "hoodie.write.lock.client.num_retries": "2",
               "hoodie.write.lock.client.wait_time_ms_between_retry": "10"}
    flaky = FlakyProvider(failures=2)
    LockManager(config_of(options, tmp_path), flaky).lock()
    assert flaky.attempts == 3
    with pytest.raises(LockError, match=r"after 3 attempt\(s\): connection to ZooKeeper lost"):
        LockManager(config_of(options, tmp_path), FlakyProvider(failures=5)).lock()


# --- the options -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("provider, why", [
    ("org.apache.hudi.client.transaction.lock.InProcessLockProvider", "within one JVM"),
    ("org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider", "DynamoDB"),
    ("org.apache.hudi.hive.transaction.lock.HiveMetastoreBasedLockProvider", "Hive Metastore"),
    ("com.example.MyLockProvider", "not a lock provider TMS can share"),
])
def test_providers_tms_cannot_share_are_refused_with_one_line(provider, why, tmp_path):
    with pytest.raises(LockConfigError, match=why) as e:
        config_of({"hoodie.write.lock.provider": provider}, tmp_path)
    assert "\n" not in str(e.value)


def test_options_are_validated_with_hudis_names_and_defaults(tmp_path):
    config = config_of({"hoodie.write.lock.provider": ZOOKEEPER, "hoodie.write.lock.zookeeper.url": "zk1,zk2:2182",
                        "hoodie.write.lock.zookeeper.port": "2181", "hoodie.write.lock.zookeeper.base_path": "/hudi",
                        "hoodie.write.concurrency.mode": "optimistic_concurrency_control"}, tmp_path)
    assert config.zookeeper.connect_string == "zk1,zk2:2182"  # the url, as Hudi's provider takes it
    assert config.zookeeper.lock_path == "/hudi/t"  # lock_key defaults to the table name
    assert (config.zookeeper.session_timeout_ms, config.zookeeper.connection_timeout_ms) == (60_000, 15_000)
    assert (config.retries.wait_time_ms, config.retries.client_num_retries) == (60_000, 50)
    assert config.max_clock_skew_ms == 200 and config.multi_writer
    fs = config_of({"hoodie.write.lock.provider": FILESYSTEM}, tmp_path)
    assert fs.filesystem.lock_dir == f"{tmp_path}/.hoodie" and fs.filesystem.expire_minutes == 0
    for bad, message in [
        ({"hoodie.write.lock.provider": ZOOKEEPER, "hoodie.write.lock.zookeeper.url": "zk"}, "needs .*base_path"),
        ({"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL"}, "needs hoodie.write.lock.provider"),
        ({"hoodie.write.lock.provider": FILESYSTEM, "hoodie.write.lock.wait_time_ms": "soon"}, "not a whole number"),
        ({"hoodie.write.lock.provider": STORAGE, "hoodie.write.lock.storage.validity.timeout.secs": "20"}, "10x"),
        ({"hoodie.write.lock.zookeper.url": "zk"}, "unknown concurrency option"),
        ({"hoodie.write.concurrency.mode": "LOCKLESS"}, "is not one of"),
    ]:
        with pytest.raises(LockConfigError, match=message):
            config_of(bad, tmp_path)
