"""A month of life in an hour (issue 36, item 4): `tms up` on a fresh data directory, with two tables written at
full speed by bench/long_life_writer.py (a delta commit every few hundred milliseconds: upserts over many
partitions, Hudi's commit callback to TMS), one on the local disk and one on the S3 test endpoint (the moto server
on loopback, as the tests start it), registered with Hudi's default policies (compaction every 5 delta commits,
clean, archival; no clustering). `tms up`'s own demo writer is held to one commit (`--interval` of a day). TMS's
history is kept 10 minutes (TMS_RETENTION_DAYS, TMS_RETENTION_EVENTS_DAYS and TMS_HEALTH_HISTORY_DAYS 0.007, the
retention run every minute): the month's retention compressed as its commits are, so that the database's size
flattens within the hour.
Every --sample seconds it prints one line per table, then one for TMS:

  commits      the table's completed delta commits so far (the writer's, as TMS's events count them, summed
               sample by sample: the retention removes the older events)
  active       files in the active timeline (.hoodie/timeline, history/ excluded)
  completed    completed instants on the active timeline; unheld: the completed commits among them that none of
               Hudi's archival rules holds back (goal: at most hoodie.keep.max.commits)
  archived     files of the archived timeline (timeline/history)
  MB           the table's bytes on storage
  ms/event     the planner's CPU milliseconds per event it processed in the sample (all tables)
  rss/fds/thr  each role's resident memory (MB), open file descriptors and threads
  db MB        TMS's database size (pg_database_size), and its events' rows

Between the samples, every --watch seconds, each table's unheld commits again: the report says what share of
the time the active timeline was over the limit and its longest stretch over it; each watch is written to
`unheld.log` in the run's scratch folder, with the table's pending instants when it was over.

The run ends after --commits delta commits of the local table or --minutes, whichever comes first. At the end,
the figures the goals are about, each as last quarter / first quarter of the run after its first --warmup
minutes (goal <= 1.1): planner CPU per event; each role's memory and descriptors; per table, the active
timeline's largest size against `hoodie.keep.max.commits` (Hudi's default 30) plus what Hudi's rules hold
back; the database's growth. Then hudi-rs reads each table (every trip once) and `tms verify` checks it.

    .venv/bin/python bench/long_life.py --commits 20000 --minutes 70     # the month: >= 20,000 delta commits
    .venv/bin/python bench/long_life.py --minutes 9 --sample 30 --warmup 3  # a short trial
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "bench"), str(REPO / "tests")]  # the writer; the S3 test endpoint

from long_life_writer import KEYS_PER_PARTITION, LongLifeWriter  # noqa: E402

ROLES = ("serve", "planner", "worker", "manager")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
BUCKET = "tms-long-life"
# TMS's own history kept 10 minutes (0.007 days), the retention run every minute
RETENTION_ENV = {"TMS_RETENTION_DAYS": "0.007", "TMS_RETENTION_EVENTS_DAYS": "0.007",
                 "TMS_HEALTH_HISTORY_DAYS": "0.007", "TMS_MANAGER_RETENTION_SECONDS": "60"}


def free_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Proc:
    """One role's process figures from /proc."""
    rss_mb: float
    fds: int
    threads: int
    cpu_s: float
    children_cpu_s: float  # of its child processes that ended (the worker's jobs)
    live_children_cpu_s: float = 0.0  # of its descendants still running (the worker's warm engines), role_trees
    fd_kinds: dict[str, int] = field(default_factory=dict)  # its descriptors by kind (socket, pipe, a file's suffix)


def _fd_kinds(pid: int) -> dict[str, int]:
    """What a process's descriptors are: sockets, pipes, anonymous inodes by name, files by their suffix."""
    kinds: Counter[str] = Counter()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        kind = target.split(":[", 1)[0] if ":[" in target else target.split("[", 1)[0]
        kinds[kind if not kind.startswith("/") else "file " + (Path(kind).suffix or Path(kind).name)] += 1
    return dict(kinds)


def _proc(pid: int) -> Proc | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        fd_kinds = _fd_kinds(pid)
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    rss_kb, threads = re.search(r"VmRSS:\s+(\d+)", status), re.search(r"Threads:\s+(\d+)", status)
    if rss_kb is None or threads is None:
        return None  # a zombie (ended, not yet waited for): it has no memory
    return Proc(int(rss_kb.group(1)) / 1024, sum(fd_kinds.values()), int(threads.group(1)),
                (int(stat[11]) + int(stat[12])) / CLOCK_TICKS, (int(stat[13]) + int(stat[14])) / CLOCK_TICKS,
                fd_kinds=fd_kinds)


def _parents() -> dict[int, int]:
    """Every process's parent, from /proc/<pid>/stat."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return parents


def descendants_cpu_s(pid: int, parents: dict[int, int]) -> float:
    """The CPU of `pid`'s running descendants, each with its own ended children's (a warm engine's JVM and Python
    workers: counted in the worker's children only once the engine ends)."""
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    total, todo = 0.0, list(children.get(pid, ()))
    while todo:
        p = todo.pop()
        if (proc := _proc(p)) is not None:
            total += proc.cpu_s + proc.children_cpu_s
        todo += children.get(p, ())
    return total


def role_pids(root: int) -> dict[str, int]:
    """The roles' processes (`python -m tms.cli <role>`) under `tms up` (pid `root`), by role."""
    parents = _parents()
    found: dict[str, int] = {}
    for pid in parents:
        ancestor = parents.get(pid)
        while ancestor not in (None, 0, 1, root):
            ancestor = parents.get(ancestor)
        if ancestor != root:
            continue
        try:
            words = [a.decode(errors="replace") for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")]
        except OSError:
            continue
        if "tms.cli" in words and (role := next((w for w in words if w in ROLES), None)):
            found[role] = pid
    return found


def database_cpu_s(data_dir: Path) -> float:
    """The embedded PostgreSQL's CPU seconds: the postmaster's, its ended backends' and its live ones'."""
    try:
        postmaster = int((data_dir / "postgres" / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    main = _proc(postmaster)
    if main is None:
        return 0.0
    children = (p for pid, parent in _parents().items() if parent == postmaster and (p := _proc(pid)) is not None)
    return main.cpu_s + main.children_cpu_s + sum(p.cpu_s for p in children)


@dataclass
class WatchedTable:
    """A table the writer drives: where it is, its id in TMS, how its files are listed."""
    name: str
    base_path: str
    table_id: int = 0
    list_files: Callable[[], list[tuple[str, int]]] = list  # (path relative to the base path, bytes)


def local_files(base: Path) -> Callable[[], list[tuple[str, int]]]:
    def files() -> list[tuple[str, int]]:
        out = []
        # os.walk passes over a folder removed while it walks (a marker folder, a month in: rglob raised)
        for folder, _, names in os.walk(base):
            for name in names:
                path = os.path.join(folder, name)
                try:
                    out.append((os.path.relpath(path, base), os.stat(path).st_size))
                except FileNotFoundError:  # removed by a clean or the archiver meanwhile
                    continue
        return out
    return files


def s3_files(endpoint, key: str) -> Callable[[], list[tuple[str, int]]]:
    def files() -> list[tuple[str, int]]:
        pages = endpoint.client().get_paginator("list_objects_v2").paginate(Bucket=endpoint.bucket, Prefix=key + "/")
        return [(o["Key"][len(key) + 1:], int(o["Size"])) for page in pages for o in page.get("Contents", [])]
    return files


@dataclass
class TableSample:
    commits: int
    active: int      # files in the active timeline
    completed: int   # completed instants on it
    archived: int    # files of the archived timeline (LSM history)
    table_bytes: int
    unheld: int | None = None  # completed commits no rule of Hudi's archiver holds back (unheld_commits)


def unheld_commits(base_path: str) -> int | None:
    """The completed commits on the active timeline that none of Hudi's archival rules holds back (the cleaner's
    retention, pending instants, compaction scheduling, the metadata table, savepoints): what the archiver would
    archive with `hoodie.keep.min.commits` 1 and `hoodie.keep.max.commits` 2, under the tables' (default) policy.
    The goal's bound: the active timeline holds at most keep.max.commits plus what those rules hold back, that is
    at most keep.max.commits of these. None if the table cannot be read at that moment."""
    from tms.hudi.table.archival import COMMITS, instants_to_archive
    from tms.hudi.table.hudi_table import HudiTable
    from tms.planning.archive import archival_options, archival_settings, cleaner_retains_from
    from tms.planning.policy import TablePolicy
    try:
        table = HudiTable.load(base_path)
        policy = TablePolicy()
        options = {**archival_options(policy), "hoodie.keep.min.commits": "1", "hoodie.keep.max.commits": "2"}
        chosen = instants_to_archive(table, archival_settings(options),
                                     cleaner_retains_from=cleaner_retains_from(table, policy, datetime.now(UTC)))
        return sum(1 for ts in chosen if (i := table.timeline.get(ts)) is not None and i.action in COMMITS)
    except Exception:  # an instant archived or a file cleaned while it read: this sample has no figure
        return None


class UnheldWatch(threading.Thread):
    """Each table's unheld commits every `every` seconds, between the samples: how long the active timeline stays
    over hoodie.keep.max.commits when it goes over (a sample a minute sees only whether it is over at that
    moment)."""

    def __init__(self, tables: list[WatchedTable], every: float, log: Path | None = None, keep_max: int = 30):
        super().__init__(daemon=True, name="unheld-watch")
        self.tables, self.every, self.log, self.keep_max = tables, every, log, keep_max
        self.seen: dict[str, list[tuple[float, int]]] = {t.name: [] for t in tables}
        self.halt = threading.Event()

    def run(self) -> None:
        out = self.log.open("w") if self.log is not None else None
        while not self.halt.wait(self.every):
            for t in self.tables:
                if (u := unheld_commits(t.base_path)) is not None:
                    self.seen[t.name].append((time.monotonic(), u))
                    if out is not None:  # each watch, and what was pending when over: to read beside TMS's logs
                        pending = pending_instants(t.base_path) if u > self.keep_max else ""
                        out.write(f"{datetime.now().strftime('%H:%M:%S.%f')[:-3]} {t.name} {u} {pending}\n")
                        out.flush()
        if out is not None:
            out.close()

    def summary(self, name: str, keep_max: int, since: float) -> str | None:
        seen = [(at, u) for at, u in self.seen[name] if at >= since]
        if not seen:
            return None
        over = [u > keep_max for _, u in seen]
        longest, start = 0.0, None  # the longest stretch of watches over the limit, first over to first under
        for (at, _), is_over in zip(seen, over, strict=True):
            if is_over and start is None:
                start = at
            elif not is_over and start is not None:
                longest, start = max(longest, at - start), None
        if start is not None:
            longest = max(longest, seen[-1][0] - start)
        share = 100 * sum(over) / len(seen)
        return (f"    watched every {self.every:g} s: {sum(over)} of {len(seen)} over ({share:.1f}% of the time), "
                f"the longest stretch over {longest:.1f} s, at most {max(u for _, u in seen)}")


def pending_instants(base_path: str) -> str:
    """The table's pending instants, as `action@instant`, for the watch log."""
    from tms.hudi.table.hudi_table import HudiTable
    try:
        tl = HudiTable.load(base_path).timeline
        return " ".join(f"{i.action}@{i.timestamp}" for i in tl.iter_instants() if not i.is_completed)
    except Exception as e:  # noqa: BLE001 (a figure of the log only)
        return f"(unreadable: {e})"


def table_sample(files: list[tuple[str, int]], commits: int) -> TableSample:
    timeline = ".hoodie/timeline/"
    active = [p[len(timeline):] for p, _ in files if p.startswith(timeline) and "/" not in p[len(timeline):]]
    archived = sum(1 for p, _ in files if p.startswith(timeline + "history/"))
    completed = sum(1 for n in active if not n.endswith((".requested", ".inflight")))
    return TableSample(commits, len(active), completed, archived, sum(size for _, size in files))


@dataclass
class Sample:
    at: float
    tables: dict[str, TableSample]
    events: int       # events the planner processed so far
    event_rows: int   # rows of the events table
    db_bytes: int
    roles: dict[str, Proc] = field(default_factory=dict)
    writers_cpu: dict[int, float] = field(default_factory=dict)  # each writer's CPU seconds so far, by pid
    database_cpu_s: float = 0.0
    endpoint_cpu_s: float = 0.0  # the S3 test endpoint's (moto's)
    db_time: Any = None  # the database's clock when taken: the next sample counts the events since


# The events since the last sample (the retention removes the older ones, so the counts so far are sums of these):
# the local and S3 tables' completed delta commits, received, and the events the planner processed.
_NEW_COMMITS = sa.text("SELECT table_id, count(*) FROM events WHERE state = 'completed' AND action = 'deltacommit' "
                       "AND received_at > :since AND received_at <= :until GROUP BY table_id")
_NEW_PROCESSED = sa.text("SELECT count(*) FROM events WHERE processed_at > :since AND processed_at <= :until")


def take(tables: list[WatchedTable], engine: sa.Engine, root: int, writers: list[int], data_dir: Path,
         prev: Sample | None = None, endpoint: int | None = None) -> Sample:
    """A sample; its counts of commits and processed events are `prev`'s plus those since it (events older than the
    retention are gone, so counting the rows would go down)."""
    with engine.connect() as conn:
        now = conn.execute(sa.text("SELECT now()")).scalar()
        since = {"since": prev.db_time if prev else datetime(1970, 1, 1, tzinfo=UTC), "until": now}
        commits: dict[int, int] = dict(conn.execute(_NEW_COMMITS, since).all())
        events = int(conn.execute(_NEW_PROCESSED, since).scalar() or 0) + (prev.events if prev else 0)
        rows = conn.execute(sa.text("SELECT count(*) FROM events")).scalar()
        db_bytes = conn.execute(sa.text("SELECT pg_database_size(current_database())")).scalar()
    per_table = {t.name: table_sample(t.list_files(), int(commits.get(t.table_id, 0))
                                      + (prev.tables[t.name].commits if prev else 0)) for t in tables}
    for t in tables:
        per_table[t.name].unheld = unheld_commits(t.base_path)
    pids = role_pids(root)
    roles = {role: p for role, pid in pids.items() if (p := _proc(pid)) is not None}
    if "worker" in roles:  # its warm engines' CPU while they run, its jobs' once they ended
        roles["worker"].live_children_cpu_s = descendants_cpu_s(pids["worker"], _parents())
    # A writer that has ended (the local one ends the run) keeps the CPU it had at the last sample it was seen in.
    writers_cpu = {pid: p.cpu_s if (p := _proc(pid)) is not None else (prev.writers_cpu.get(pid, 0.0) if prev else 0.0)
                   for pid in writers}
    moto = _proc(endpoint) if endpoint is not None else None
    return Sample(time.monotonic(), per_table, events, int(rows or 0), int(db_bytes or 0), roles, writers_cpu,
                  database_cpu_s(data_dir), moto.cpu_s if moto is not None else 0.0, now)


def planner_ms_per_event(a: Sample, b: Sample) -> float | None:
    events = b.events - a.events
    if events <= 0 or "planner" not in a.roles or "planner" not in b.roles:
        return None
    return 1000 * (b.roles["planner"].cpu_s - a.roles["planner"].cpu_s) / events


def lines(prev: Sample, s: Sample, started: float) -> list[str]:
    minutes = (s.at - started) / 60
    out = []
    for name, t in s.tables.items():
        rate = (t.commits - prev.tables[name].commits) / max(1e-9, s.at - prev.at)
        out.append(f"{minutes:6.1f} min  {name:<13} commits {t.commits:6d} ({rate:4.1f}/s)  active {t.active:4d}  "
                   f"completed {t.completed:4d} (unheld {t.unheld!s:>3})  archived {t.archived:4d}  "
                   f"{t.table_bytes / 2**20:7.1f} MB")
    per_event = planner_ms_per_event(prev, s)
    roles = " ".join(f"{r}={p.rss_mb:.0f}/{p.fds}/{p.threads}" for r, p in sorted(s.roles.items()))
    out.append(f"{minutes:6.1f} min  TMS  ms/event {per_event if per_event is None else round(per_event, 1)!s:>6}  "
               f"rss/fds/thr {roles}  db {s.db_bytes / 2**20:.1f} MB ({s.event_rows} events)")
    return out


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def quarter_ratio(samples: list[Sample], figure) -> tuple[float | None, float | None]:
    """The mean of `figure` over the first and the last quarter of the samples."""
    n = max(1, len(samples) // 4)
    first = [v for v in (figure(s) for s in samples[:n]) if v is not None]
    last = [v for v in (figure(s) for s in samples[-n:]) if v is not None]
    return _mean(first), _mean(last)


def report(samples: list[Sample], keep_max: int, watch: UnheldWatch | None = None) -> None:
    print("\nfigures (first quarter -> last quarter; goal: last / first <= 1.1)")
    # A quarter's planner CPU over the events it processed (a minute's figure moves with that minute's events:
    # the planner's own periodic work is spread over fewer of them when the machine slows the writers)
    n = max(1, (len(samples) - 1) // 4)
    first = planner_ms_per_event(samples[0], samples[n])
    last = planner_ms_per_event(samples[-1 - n], samples[-1])
    minutes = [v for a, b in zip(samples, samples[1:], strict=False) if (v := planner_ms_per_event(a, b)) is not None]
    if first and last:
        print(f"  planner CPU per event: {first:.1f} ms -> {last:.1f} ms, ratio {last / first:.2f} (a quarter's CPU "
              f"over its events; per sample {min(minutes):.1f}-{max(minutes):.1f} ms)")
    for role in ROLES:
        for name, figure in (("memory MB", lambda s, r=role: s.roles[r].rss_mb if r in s.roles else None),
                             ("descriptors", lambda s, r=role: s.roles[r].fds if r in s.roles else None),
                             ("threads", lambda s, r=role: s.roles[r].threads if r in s.roles else None)):
            before, after = quarter_ratio(samples, figure)
            if before and after:
                print(f"  {role} {name}: {before:.0f} -> {after:.0f}, ratio {after / before:.2f}")
                if name == "descriptors" and after > before and role in samples[0].roles and role in samples[-1].roles:
                    print(f"    by kind, the first sample {samples[0].roles[role].fd_kinds} -> the last "
                          f"{samples[-1].roles[role].fd_kinds}")
    seconds = samples[-1].at - samples[0].at
    commits = _commits(samples[0], samples[-1])
    if commits > 0 and all(r in samples[0].roles and r in samples[-1].roles for r in ROLES):
        shares = cpu_shares(samples[0], samples[-1])
        print("  CPU per delta commit (seconds; the worker's with its jobs): "
              + ", ".join(f"{r} {v / commits:.3f}" for r, v in shares.items())
              + f"; all {sum(shares.values()) / commits:.3f} s, so at most {2 * commits / sum(shares.values()):.1f} "
                f"delta commits/s on 2 free cores")
        n = max(1, (len(samples) - 1) // 4)
        quarters = [(samples[0], samples[n]), (samples[-1 - n], samples[-1])]
        if all(r in s.roles for pair in quarters for s in pair for r in ROLES):
            (cpu_first, per_first), (cpu_last, per_last) = [(cpu_shares(a, b), max(1, _commits(a, b)))
                                                             for a, b in quarters]
            print("    first quarter -> last quarter: " + ", ".join(
                f"{r} {cpu_first[r] / per_first:.3f} -> {cpu_last[r] / per_last:.3f}" for r in cpu_first))
    for name in samples[0].tables:
        ts = [s.tables[name] for s in samples]
        commits = ts[-1].commits - ts[0].commits
        print(f"  {name}: {commits} delta commits in {seconds / 60:.1f} min ({commits / max(seconds, 1e-9):.2f}/s, "
              f"{ts[-1].commits} in all); active timeline at most {max(t.completed for t in ts)} completed instants "
              f"({max(t.active for t in ts)} files), the last sample {ts[-1].completed} (hoodie.keep.max.commits "
              f"{keep_max}, plus what Hudi's rules hold back); archived timeline {ts[-1].archived} files; storage "
              f"{ts[0].table_bytes / 2**20:.1f} MB -> {ts[-1].table_bytes / 2**20:.1f} MB")
        unheld = sorted(t.unheld for t in ts if t.unheld is not None)
        if unheld:
            over = sum(1 for u in unheld if u > keep_max)
            print(f"    of them not held back by Hudi's rules: median {unheld[len(unheld) // 2]}, 90th percentile "
                  f"{unheld[len(unheld) * 9 // 10]}, at most {max(unheld)}, mean {sum(unheld) / len(unheld):.1f} "
                  f"({len(unheld)} samples, {over} over hoodie.keep.max.commits {keep_max})")
        if watch is not None and (line := watch.summary(name, keep_max, samples[0].at)) is not None:
            print(line)
    before, after = quarter_ratio(samples, lambda s: s.db_bytes / 2**20)
    grown = samples[-1].db_bytes - samples[0].db_bytes
    print(f"  database: {before or 0:.1f} MB -> {after or 0:.1f} MB ({grown / 2**10 / max(commits, 1):.1f} KB per "
          f"delta commit; {samples[-1].event_rows} events; TMS_RETENTION_EVENTS_DAYS "
          f"{RETENTION_ENV['TMS_RETENTION_EVENTS_DAYS']}: flat once the run is longer than that)")


def _commits(a: Sample, b: Sample) -> int:
    return sum(b.tables[n].commits - a.tables[n].commits for n in a.tables)


def cpu_shares(a: Sample, b: Sample) -> dict[str, float]:
    """The CPU seconds each part of the run spent between two samples: the roles (the worker with its jobs), the
    writers, the database and the S3 test endpoint (the machine's other tenants: their growth slows the roles)."""
    def role_cpu(s: Sample, r: str) -> float:
        p = s.roles[r]
        return p.cpu_s + p.children_cpu_s + p.live_children_cpu_s

    shares = {r: role_cpu(b, r) - role_cpu(a, r) for r in ROLES}
    shares["writers"] = sum(b.writers_cpu.values()) - sum(a.writers_cpu.values())
    shares["database"] = b.database_cpu_s - a.database_cpu_s
    shares["s3 endpoint"] = b.endpoint_cpu_s - a.endpoint_cpu_s
    return shares


def read_with_hudi_rs(t: WatchedTable, trips: int) -> str:
    """What hudi-rs reads of the table: every trip once, or what differs."""
    from hudi import HudiTableBuilder
    try:
        batches = HudiTableBuilder.from_base_uri(t.base_path).build().read()
    except Exception as e:  # noqa: BLE001 (told, not raised: the run's figures stand)
        return f"hudi-rs could not read it: {e}"
    keys = [k for b in batches for k in b.column("_hoodie_record_key").to_pylist()]
    if len(keys) == trips and len(set(keys)) == trips:
        return f"hudi-rs reads {trips} trips, each once"
    return f"hudi-rs reads {len(keys)} rows, {len(set(keys))} trips (expected {trips})"


def verify(t: WatchedTable, env: dict[str, str]) -> str:
    """`tms verify`'s last line on the table (its consistency: metadata, pending instants, files no instant
    references)."""
    done = subprocess.run([sys.executable, "-m", "tms", "verify", t.base_path], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    out = (done.stdout + done.stderr).strip().splitlines()
    return f"tms verify: {out[-1] if out else '(nothing printed)'}" + ("" if done.returncode == 0 else
                                                                     f" (exit {done.returncode}: {out[:5]})")


def _wait_up(up: subprocess.Popen, url: str, deadline: float) -> bool:
    while time.monotonic() < deadline and up.poll() is None:
        if len(role_pids(up.pid)) == len(ROLES):
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
        time.sleep(1)
    return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commits", type=int, default=20000, help="stop after the local table's writer wrote this "
                                                                "many delta commits (0: no bound)")
    ap.add_argument("--minutes", type=float, default=70, help="stop after this long at the latest")
    ap.add_argument("--interval", type=float, default=0,
                    help="at most one commit per this many seconds on the local table (0: full speed)")
    ap.add_argument("--s3-interval", type=float, default=0.5,
                    help="the same on the S3 table (the moto server handles one request at a time)")
    ap.add_argument("--no-s3", action="store_true", help="the local table only")
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--partitions-per-commit", type=int, default=8)
    ap.add_argument("--batch", type=int, default=200, help="upserts per delta commit")
    ap.add_argument("--sample", type=float, default=60, help="seconds between samples")
    ap.add_argument("--watch", type=float, default=5, help="seconds between the unheld-commit watches (0: none)")
    ap.add_argument("--keep-max-commits", type=int, default=30, help="the tables' hoodie.keep.max.commits")
    ap.add_argument("--warmup", type=float, default=6, help="minutes left out of the ratios (the roles warm up: "
                                                             "the manager's first health pass comes at 5)")
    ap.add_argument("--data-dir", type=Path, help="the data directory (default: a fresh one)")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="tms-long-life-"))
    data_dir = (args.data_dir or scratch / "data").resolve()
    (data_dir / "tables").mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    admin, callback_key = os.urandom(16).hex(), os.urandom(16).hex()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TMS_")}, **RETENTION_ENV,
           "TMS_RUNTIME_DIR": str(scratch / "run"), "TMS_ADMIN_TOKEN": admin, "TMS_CALLBACK_KEY": callback_key}
    endpoint = None
    tables = [WatchedTable("local", str(data_dir / "tables" / "long_life"),
                           list_files=local_files(data_dir / "tables" / "long_life"))]
    if not args.no_s3:
        from s3_endpoint import S3Endpoint
        endpoint = S3Endpoint.start(scratch / "moto.log", bucket=BUCKET)
        os.environ.update(endpoint.env())  # this process's S3 reads and hudi-rs reach it too
        env.update(endpoint.env())
        env["TMS_STORAGE_ROOTS"] = f"s3://{BUCKET}"
        tables.append(WatchedTable("s3", endpoint.uri("long_life_s3"), list_files=s3_files(endpoint, "long_life_s3")))
        print(f"S3 test endpoint {endpoint.url}, bucket {BUCKET}")
    log = (scratch / "up.log").open("w")
    # `tms up`'s own demo writer: one commit, then a day's wait (the long-life writers drive the load)
    up = subprocess.Popen([sys.executable, "-m", "tms", "up", "--data-dir", str(data_dir), "--port", str(port),
                           "--interval", "86400"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    print(f"tms up (pid {up.pid}) at {url}, data in {data_dir}, its console in {scratch / 'up.log'}")
    writers: list[subprocess.Popen] = []
    samples: list[Sample] = []
    try:
        if not _wait_up(up, url, time.monotonic() + 600):
            print(f"error: tms up did not start (see {scratch / 'up.log'})")
            return 1
        from tms.db.embedded import embedded_database_url
        from tms.ops.client import TmsClient
        with TmsClient(url, admin) as client:
            for t in tables:  # created and seeded (one insert of every trip) before TMS is told of them
                LongLifeWriter(t.base_path, name=f"long_life_{t.name}", partitions=args.partitions)
                t.table_id = int(client.post("/tables", {"base_path": t.base_path})["id"])
        trips = args.partitions * KEYS_PER_PARTITION
        for t in tables:
            interval = args.interval if t.name == "local" else args.s3_interval
            out = (scratch / f"writer-{t.name}.log").open("w")
            writers.append(subprocess.Popen(
                [sys.executable, str(REPO / "bench" / "long_life_writer.py"), "--path", t.base_path, "--name",
                 f"long_life_{t.name}", "--commits", str(args.commits if t.name == "local" else 0), "--seconds",
                 str(args.minutes * 60), "--interval", str(interval), "--partitions", str(args.partitions),
                 "--partitions-per-commit", str(args.partitions_per_commit), "--batch", str(args.batch),
                 "--callback-url", f"{url}/api/v1/hudi/callback", "--callback-key", callback_key],
                cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT))
            print(f"table {t.name} (TMS table {t.table_id}) at {t.base_path}: its writer's log in {out.name}")
        engine = sa.create_engine(embedded_database_url(data_dir))
        started = time.monotonic()
        moto = endpoint.process.pid if endpoint is not None else None
        samples.append(take(tables, engine, up.pid, [w.pid for w in writers], data_dir, endpoint=moto))
        stop = threading.Event()
        watch = (UnheldWatch(tables, args.watch, scratch / "unheld.log", args.keep_max_commits)
                 if args.watch > 0 else None)
        if watch is not None:
            watch.start()
        while (time.monotonic() - started < args.minutes * 60 and up.poll() is None
               and writers[0].poll() is None):
            stop.wait(args.sample)
            samples.append(take(tables, engine, up.pid, [w.pid for w in writers], data_dir, samples[-1], moto))
            print("\n".join(lines(samples[-2], samples[-1], started)), flush=True)
        if up.poll() is not None:
            print(f"error: tms up exited with {up.returncode} (see {scratch / 'up.log'})")
        elif writers[0].poll() is not None and len(samples) > 2:
            # The local writer ended within the last interval: the planner's periodic work over its few events
            # would count as a rise of its CPU per event (a 63-minute run: 35 ms in that minute, 15-22 before).
            samples.pop()
        if watch is not None:
            watch.halt.set()
        for w in writers:
            w.send_signal(signal.SIGTERM)
            w.wait(120)
        for t in tables:
            print(f"{t.name}: writer: {(scratch / f'writer-{t.name}.log').read_text().strip().splitlines()[-1]}")
        settled = [s for s in samples if s.at - started >= args.warmup * 60]
        if len(settled) > 2:
            report(settled, args.keep_max_commits, watch)
        for t in tables:
            print(f"  {t.name}: {read_with_hudi_rs(t, trips)}; {verify(t, env)}")
        engine.dispose()
    finally:
        for w in writers:
            if w.poll() is None:
                w.kill()
        if up.poll() is None:
            up.send_signal(signal.SIGINT)
            try:
                up.wait(120)
            except subprocess.TimeoutExpired:
                up.kill()
        log.close()
        if endpoint is not None:
            endpoint.stop()
    return 0 if samples and up.returncode in (None, 0, -signal.SIGINT, 130) else 1


if __name__ == "__main__":
    sys.exit(main())
