"""A long life in a short time: `tms up` on a fresh data directory with its demo writer at full speed (a commit
every --interval seconds: upserts and deletes over the demo table's partitions, commit callbacks on), watched for
--minutes. Every --sample seconds it prints one line:

  commits      the demo table's completed writes so far (delta commits and commits)
  active       files in the active timeline (.hoodie/timeline, history/ excluded; .hoodie for version 6)
  completed    completed instants on the active timeline
  archived     files of the archived timeline (timeline/history, or .hoodie/archived for version 6)
  MB           the table's bytes on storage
  ms/event     the planner's CPU milliseconds per event it processed in the sample
  rss/fds/thr  each role's resident memory (MB), open file descriptors and threads
  db MB        TMS's database size (pg_database_size)

At the end, the figures the goals are about, each as last quarter / first quarter of the run after its first
--warmup minutes (goal <= 1.1):
planner CPU per event; each role's memory and descriptors; and the active timeline's largest size against
`hoodie.keep.max.commits` (the table's, or Hudi's default 30) plus what Hudi's rules hold back.

    .venv/bin/python bench/long_life.py                          # an hour
    .venv/bin/python bench/long_life.py --minutes 10 --sample 30
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

REPO = Path(__file__).resolve().parent.parent
ROLES = ("serve", "planner", "worker", "manager")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
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


def _proc(pid: int) -> Proc | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]
    threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    return Proc(rss, fds, threads, (int(stat[11]) + int(stat[12])) / CLOCK_TICKS)


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


def timeline_figures(table: Path) -> tuple[int, int, int]:
    """(active timeline files, completed instants on it, archived timeline files)."""
    timeline = table / ".hoodie" / "timeline"
    if timeline.is_dir():  # table version 8 and later
        active = [p.name for p in timeline.iterdir() if p.is_file()]
        history = timeline / "history"
        archived = sum(1 for p in history.rglob("*") if p.is_file()) if history.is_dir() else 0
    else:                   # version 6
        hoodie = table / ".hoodie"
        active = [p.name for p in hoodie.iterdir() if p.is_file() and p.name[:1].isdigit()]
        archive = hoodie / "archived"
        archived = sum(1 for p in archive.iterdir() if p.is_file()) if archive.is_dir() else 0
    completed = sum(1 for n in active if not n.endswith((".requested", ".inflight")))
    return len(active), completed, archived


def table_bytes(table: Path) -> int:
    return sum(p.stat().st_size for p in table.rglob("*") if p.is_file())


@dataclass
class Sample:
    at: float
    commits: int
    active: int
    completed: int
    archived: int
    table_bytes: int
    events: int
    db_bytes: int
    roles: dict[str, Proc] = field(default_factory=dict)


def take(table: Path, engine: sa.Engine, root: int) -> Sample:
    active, completed, archived = timeline_figures(table)
    with engine.connect() as conn:
        commits = conn.execute(sa.text(
            "SELECT count(*) FROM events WHERE state = 'completed' AND action IN ('deltacommit', 'commit')")).scalar()
        events = conn.execute(sa.text("SELECT count(*) FROM events WHERE processed_at IS NOT NULL")).scalar()
        db_bytes = conn.execute(sa.text("SELECT pg_database_size(current_database())")).scalar()
    roles = {role: p for role, pid in role_pids(root).items() if (p := _proc(pid)) is not None}
    return Sample(time.monotonic(), int(commits or 0), active, completed, archived, table_bytes(table),
                  int(events or 0), int(db_bytes or 0), roles)


def planner_ms_per_event(a: Sample, b: Sample) -> float | None:
    events = b.events - a.events
    if events <= 0 or "planner" not in a.roles or "planner" not in b.roles:
        return None
    return 1000 * (b.roles["planner"].cpu_s - a.roles["planner"].cpu_s) / events


def line(prev: Sample, s: Sample, started: float) -> str:
    per_event = planner_ms_per_event(prev, s)
    roles = " ".join(f"{r}={p.rss_mb:.0f}/{p.fds}/{p.threads}" for r, p in sorted(s.roles.items()))
    return (f"{(s.at - started) / 60:6.1f} min  commits {s.commits:6d}  active {s.active:5d}  completed "
            f"{s.completed:4d}  archived {s.archived:4d}  {s.table_bytes / 2**20:7.1f} MB  ms/event "
            f"{per_event if per_event is None else round(per_event, 1)!s:>6}  rss/fds/thr {roles}  "
            f"db {s.db_bytes / 2**20:.1f} MB")


def quarter_ratio(samples: list[Sample], figure) -> tuple[float | None, float | None]:
    """The mean of `figure` over the first and the last quarter of the samples."""
    n = max(1, len(samples) // 4)
    first = [v for v in (figure(s) for s in samples[:n]) if v is not None]
    last = [v for v in (figure(s) for s in samples[-n:]) if v is not None]
    return _mean(first), _mean(last)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def report(samples: list[Sample], keep_max: int) -> None:
    print("\nfigures (first quarter -> last quarter; goal: last / first <= 1.1)")
    per_event = [planner_ms_per_event(a, b) for a, b in zip(samples, samples[1:], strict=False)]
    n = max(1, len(per_event) // 4)
    first = _mean([v for v in per_event[:n] if v is not None])
    last = _mean([v for v in per_event[-n:] if v is not None])
    if first and last:
        print(f"  planner CPU per event: {first:.1f} ms -> {last:.1f} ms, ratio {last / first:.2f}")
    for role in ROLES:
        for name, figure in (("memory MB", lambda s, r=role: s.roles[r].rss_mb if r in s.roles else None),
                             ("descriptors", lambda s, r=role: s.roles[r].fds if r in s.roles else None)):
            before, after = quarter_ratio(samples, figure)
            if before and after:
                print(f"  {role} {name}: {before:.0f} -> {after:.0f}, ratio {after / before:.2f}")
    print(f"  active timeline: at most {max(s.completed for s in samples)} completed instants "
          f"({max(s.active for s in samples)} files); the last sample {samples[-1].completed} "
          f"(hoodie.keep.max.commits {keep_max}, plus what Hudi's rules hold back)")
    print(f"  archived timeline files at the end: {samples[-1].archived}")
    before, after = quarter_ratio(samples, lambda s: s.db_bytes / 2**20)
    print(f"  database: {before or 0:.1f} MB -> {after or 0:.1f} MB")
    print(f"  commits: {samples[-1].commits} in {(samples[-1].at - samples[0].at) / 60:.1f} min")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--interval", type=float, default=0.2, help="seconds between the demo writer's commits")
    ap.add_argument("--sample", type=float, default=60, help="seconds between samples")
    ap.add_argument("--keep-max-commits", type=int, default=30, help="the table's hoodie.keep.max.commits")
    ap.add_argument("--warmup", type=float, default=3, help="minutes left out of the ratios (the roles warm up)")
    ap.add_argument("--data-dir", type=Path, help="the data directory (default: a fresh one)")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="tms-long-life-"))
    data_dir = args.data_dir or scratch / "data"
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TMS_")},
           "TMS_RUNTIME_DIR": str(scratch / "run")}
    log = (scratch / "up.log").open("w")
    up = subprocess.Popen([sys.executable, "-m", "tms", "up", "--data-dir", str(data_dir), "--port", str(port),
                           "--interval", str(args.interval)], cwd=REPO, env=env, stdout=log,
                          stderr=subprocess.STDOUT)
    print(f"tms up (pid {up.pid}) on port {port}, data in {data_dir}, its console in {scratch / 'up.log'}")
    table = data_dir / "tables" / "trips"
    samples: list[Sample] = []
    try:
        deadline = time.monotonic() + 600
        while not (table / ".hoodie").is_dir() or not (data_dir / "postgres").is_dir() or len(role_pids(up.pid)) < 4:
            if up.poll() is not None or time.monotonic() > deadline:
                print(f"error: tms up did not start (see {scratch / 'up.log'})")
                return 1
            time.sleep(1)
        from tms.db.embedded import embedded_database_url
        engine = sa.create_engine(embedded_database_url(data_dir))
        started = time.monotonic()
        samples.append(take(table, engine, up.pid))
        stop = threading.Event()
        while time.monotonic() - started < args.minutes * 60 and up.poll() is None:
            stop.wait(args.sample)
            samples.append(take(table, engine, up.pid))
            print(line(samples[-2], samples[-1], started), flush=True)
        if up.poll() is not None:
            print(f"error: tms up exited with {up.returncode} (see {scratch / 'up.log'})")
        settled = [s for s in samples if s.at - started >= args.warmup * 60]
        if len(settled) > 2:
            report(settled, args.keep_max_commits)
        engine.dispose()
    finally:
        if up.poll() is None:
            up.send_signal(signal.SIGINT)
            try:
                up.wait(120)
            except subprocess.TimeoutExpired:
                up.kill()
        log.close()
    return 0 if up.returncode in (0, -signal.SIGINT, 130) or samples else 1


if __name__ == "__main__":
    sys.exit(main())
