"""The tests' side of the Java harness: a warm driver (driver.py, in the harness's PySpark 3.5 venv with one
Hudi bundle on its classpath) taking write, read and SQL commands, and the Hudi options of a writer that
hands its table services to TMS (callbacks on, inline services off, optimistic concurrency control under the
file-system lock TMS shares)."""
from __future__ import annotations

import hashlib
import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DRIVER = Path(__file__).resolve().parent / "driver.py"
ANSWER = "ANSWER "
FILESYSTEM_LOCK = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"


class JavaHudiError(AssertionError):
    """Java Hudi refused a command: the message is its exception."""


def writer_options(callback_url: str, callback_key: str) -> dict[str, str]:
    """A Java writer that hands its table services to TMS and tells it of every commit."""
    return {
        "hoodie.write.commit.callback.on": "true",
        "hoodie.write.commit.callback.http.url": callback_url,
        "hoodie.write.commit.callback.http.api.key": callback_key,
        "hoodie.write.commit.callback.http.timeout.seconds": "30",
        "hoodie.compact.inline": "false",
        "hoodie.compact.schedule.inline": "false",
        "hoodie.clustering.inline": "false",
        "hoodie.clustering.schedule.inline": "false",
        "hoodie.clean.automatic": "false",
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        "hoodie.cleaner.policy.failed.writes": "LAZY",
        "hoodie.write.lock.provider": FILESYSTEM_LOCK,
        # The harness's speed only (the table is the same): no embedded timeline server to start per write
        # (Hudi then writes its markers directly).
        "hoodie.embed.timeline.server": "false",
    }


def standalone_writer_options() -> dict[str, str]:
    """The same writer without TMS's commit callback (a table TMS does not serve, or not yet)."""
    return {k: v for k, v in writer_options("", "").items() if not k.startswith("hoodie.write.commit.callback")}


def table_lock_policies() -> dict[str, str]:
    """The same concurrency control, as TMS registers it for the table."""
    return {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
            "hoodie.write.lock.provider": FILESYSTEM_LOCK}


class HudiDriver:
    """One warm Spark 3.5 + Hudi session in a child process; `call` sends a command and returns its answer."""

    def __init__(self, python: Path, bundle: Path, log: Path, start_timeout: float = 240, memory: str = "1g",
                 extra_jars: Sequence[Path] = ()):
        self.log_path = log
        self._log = log.open("w")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_", "VIRTUAL_ENV"))}
        env["PYSPARK_PYTHON"] = str(python)
        began = time.monotonic()
        jars = ",".join(str(jar) for jar in (bundle, *extra_jars))
        self.process = subprocess.Popen([str(python), str(DRIVER), jars, memory], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self._log, text=True, env=env)
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        ready = self._next(start_timeout, "the driver to start")
        self.start_seconds = time.monotonic() - began
        self.table_version: int = ready["table_version"]
        self.spark_version: str = ready["spark"]

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith(ANSWER):
                self._answers.put(json.loads(line[len(ANSWER):]))
        self._answers.put(None)

    def _next(self, timeout: float, what: str) -> dict[str, Any]:
        try:
            answer = self._answers.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"timed out waiting for {what}; driver log: {self.log_path}") from None
        if answer is None:
            raise AssertionError(f"the Hudi driver ended while waiting for {what}:\n{self.tail()}")
        return answer

    def tail(self, chars: int = 4000) -> str:
        self._log.flush()
        return self.log_path.read_text()[-chars:]

    def call(self, timeout: float = 300, **command: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        answer = self._next(timeout, f"Java Hudi's {command['op']}")
        if "error" in answer:
            raise JavaHudiError(f"Java Hudi's {command['op']} failed: {answer['error']}\n{answer.get('trace', '')}")
        return answer

    def set_hadoop_conf(self, conf: dict[str, str]) -> None:
        """Set Hadoop configuration (e.g. `fs.s3a.*`) in the driver's session, before it opens that store."""
        self.call(op="hadoop_conf", conf=conf)

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.process.stdin.close()
                self.process.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        self._log.close()


class DriverPool:
    """One warm driver per table version for a whole test session (a JVM costs a minute to start on a busy
    machine); a driver that died is started again. Tests write tables under their own paths, so they share it."""

    def __init__(self, logs: Path):
        self.logs = logs
        self._drivers: dict[tuple[int, bool], HudiDriver] = {}

    def __call__(self, version: int, s3a: bool = False) -> HudiDriver:
        """`s3a`: a driver with Hadoop's S3A connector too (a JVM of its own)."""
        driver = self._drivers.get((version, s3a))
        if driver is None or driver.process.poll() is not None:
            log = self.logs / f"hudi-driver-v{version}{'-s3a' if s3a else ''}.log"
            driver = self._drivers[(version, s3a)] = start_driver(version, log, s3a)
        return driver

    def close(self) -> None:
        for driver in self._drivers.values():
            driver.close()


def start_driver(version: int, log: Path, s3a: bool = False) -> HudiDriver:
    """A driver of the Hudi release pinned for table `version`; a machine without the harness fails the test in
    one line naming what is missing (never a skip)."""
    import pytest

    from . import harness_env
    try:
        python, jars = harness_env.ensure()
        extra_jars = harness_env.s3a_jars() if s3a else []
    except harness_env.HarnessEnvError as exc:
        pytest.fail(f"the Java Hudi harness is missing: {exc}", pytrace=False)
    return HudiDriver(python, jars[version], log, extra_jars=extra_jars)


class JavaWriter:
    """A Java Hudi writer of one table (through a driver), and the model of the rows it was acknowledged."""

    def __init__(self, driver: HudiDriver, path: Path | str, table_type: str, options: dict[str, str]):
        """`path`: a local path or a URL (`s3a://bucket/...`)."""
        self.driver, self.path, self.table_type, self.options = driver, path, table_type, options
        self.name = str(path).rstrip("/").rsplit("/", 1)[-1]
        self.model: dict[str, dict[str, Any]] = {}
        self.instants: list[str] = []
        self.completions: list[str] = []  # each write's completion time (Hudi 0.15: its instant)
        self.snapshots: list[list[dict[str, Any]]] = []  # the model after each write
        self.last_write: dict[str, int] = {}  # key -> the index of the write that last upserted it
        self.write_seconds: list[float] = []

    def write(self, operation: str, rows: list[dict[str, Any]], boolean_columns: list[str] | None = None,
              string_columns: list[str] | None = None, long_columns: list[str] | None = None) -> str:
        """`boolean_columns`, `string_columns`, `long_columns`: columns the rows have beyond the driver's schema
        (e.g. _hoodie_is_deleted, AWS DMS's Op, Debezium's _event_lsn); the model takes such rows as they are."""
        answer = self.driver.call(op="write", path=str(self.path), name=self.name, table_type=self.table_type,
                                  operation=operation, rows=rows, options=self.options,
                                  boolean_columns=boolean_columns or [], string_columns=string_columns or [],
                                  long_columns=long_columns or [])
        for row in rows:  # acknowledged: the model takes it (every write carries a newer ts)
            if operation == "delete":
                self.model.pop(row["id"], None)
                self.last_write.pop(row["id"], None)
            else:
                self.model[row["id"]] = dict(row)
                self.last_write[row["id"]] = len(self.instants)
        self.instants.append(answer["instant"])
        self.completions.append(answer["completion"])
        self.snapshots.append(self.expected())
        self.write_seconds.append(answer["seconds"])
        return answer["instant"]

    def crash(self, operation: str, rows: list[dict[str, Any]], failing_id: str) -> str:
        """A write that crashes after Hudi started its instant (never acknowledged: the model is unchanged);
        the failure Java Hudi raised, which must be the harness's crash."""
        answer = self.driver.call(op="crash_write", path=str(self.path), name=self.name,
                                  table_type=self.table_type, operation=operation, rows=rows, options=self.options,
                                  failing_id=failing_id)
        assert answer["crashed_here"], f"the write failed otherwise: {answer['failure']}"
        return answer["failure"]

    def read(self, query_type: str = "snapshot", *, extra_columns: tuple[str, ...] = (),
             **options: str) -> list[dict[str, Any]]:
        """`extra_columns`: columns beyond the driver's schema to read too."""
        return sorted(self.driver.call(op="read", path=str(self.path), query_type=query_type, options=options,
                                       extra_columns=list(extra_columns))["rows"], key=lambda r: r["id"])

    def read_as_of(self, write: int) -> list[dict[str, Any]]:
        """Java Hudi's time-travel read as of the `write`-th write (its completion time: no later write began
        before it, so it is the same moment whether Hudi compares instants or completion times)."""
        return self.read("snapshot", **{"as.of.instant": self.completions[write]})

    def read_changes_after(self, write: int) -> list[dict[str, Any]]:
        """Java Hudi's incremental read of what the writes after the `write`-th changed (Hudi 1.x ranges over
        completion times, 0.15 over instants)."""
        return self.read("incremental", **{"hoodie.datasource.read.begin.instanttime": self.completions[write]})

    def changed_after(self, write: int) -> list[dict[str, Any]]:
        """The model of `read_changes_after`: the rows last upserted by a later write (deletes are not rows)."""
        return sorted((self.model[k] for k, w in self.last_write.items() if w > write), key=lambda r: r["id"])

    def expected(self) -> list[dict[str, Any]]:
        return sorted(self.model.values(), key=lambda r: r["id"])


PARTITIONS = ["americas", "asia", "europe"]
COLUMNS = ["id", "part", "ts", "name", "value"]  # the driver's schema


def row(i: int, ts: int, name: str = "n") -> dict:
    """A row of the harness's three-partition table: key `k<i>`, ordering field `ts`."""
    return {"id": f"k{i:03d}", "part": PARTITIONS[i % 3], "ts": ts, "name": f"{name}{i}", "value": i * ts}


def plain_rows(rows: list[dict]) -> list[dict]:
    """Rows with the driver's columns only (no meta fields), sorted by key."""
    return sorted(({c: r[c] for c in COLUMNS} for r in rows), key=lambda r: r["id"])


def trip_row(i: int, ts: int, name: str) -> dict:
    """A row of the harness's two-partition trips table: key `k<i>`, ordering field `ts`."""
    return {"id": f"k{i:02d}", "part": ("americas", "europe")[i % 2], "ts": ts, "name": f"{name}{i}", "value": i * ts}


def write_logs(writer: JavaWriter) -> None:
    """Three writes: twelve inserts, upserts of four of them and two new keys, two deletes (on MERGE_ON_READ,
    file groups with log files: a compaction's work)."""
    writer.write("insert", [trip_row(i, 1, "n") for i in range(12)])
    writer.write("upsert", [trip_row(i, 2, "u") for i in range(0, 12, 3)] + [trip_row(i, 2, "new") for i in (12, 13)])
    writer.write("delete", [trip_row(i, 3, "d") for i in (1, 6)])


def metadata_mismatches(driver: HudiDriver, path: Path | str) -> list[dict[str, Any]]:
    """Hudi's own check of the metadata table's file listing against storage (`validate_metadata_table_files`,
    verbose: a row per file, in storage or in the metadata table): the rows that differ."""
    # A catalog name of this path's own: the session's driver is shared by tests whose tables share a name.
    name = f"tms_{hashlib.sha1(str(path).encode()).hexdigest()[:16]}"
    driver.call(op="sql", statement=f"CREATE TABLE IF NOT EXISTS {name} USING hudi LOCATION '{path}'")
    rows = driver.call(op="sql", statement=f"CALL validate_metadata_table_files(table => '{name}', verbose => true)")
    assert rows["rows"], "Hudi's validation listed no file"
    return [r for r in rows["rows"] if not (r["is_present_in_fs"] and r["is_present_in_metadata"]
                                             and r["fs_size"] == r["metadata_size"])]
