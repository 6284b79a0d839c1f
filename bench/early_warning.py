"""Early warning on a replayed history: how early and how precisely `predicted_timeout` warns.

A simulated deployment (seeded, so every run replays the same history): tables whose compactions arrive
at a rate that varies through the day, onto one queue of a few slots (FIFO; a task waits while it is
full). A run lasts overhead + bytes x the table's rate, slowed by its queue's load when it starts, with
log-normal noise; a few runs are much slower than their bytes explain (skew, spills). A run past the
timeout is killed (timed out). Every `--every` seconds the monitor looks at each waiting and running task
through the predictor the manager's monitor uses (manager.early_warning), fitted on the table's last 20
succeeded runs, as `predicted_timeout` reads them from the database.

Printed: precision (warned tasks that did time out), recall (timed-out tasks warned of), and the lead time
(from the first warning to the moment the task timed out: median, 10th percentile), for the predictor and,
side by side, the previous rule (median seconds per byte x bytes > timeout, running tasks only).

    .venv/bin/python bench/early_warning.py
    .venv/bin/python bench/early_warning.py --tasks 20000 --seed 7
"""
from __future__ import annotations

import argparse
import heapq
import math
import random
import statistics
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from manager.early_warning import HISTORY, Run, forecast

MB = 2**20


@dataclass
class SimTask:
    id: int
    table: int
    size: int
    arrived: float
    true_seconds: float = 0.0
    started: float | None = None
    load: float = 0.0
    ended: float | None = None
    timed_out: bool = False
    warned_at: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class World:
    tables: int = 12
    slots: int = 6
    timeout: float = 1800.0
    overhead: float = 40.0
    noise_sigma: float = 0.2      # log-normal noise of a run's duration
    slow_share: float = 0.04      # runs much slower than their bytes explain
    load_slowdown: float = 0.6    # a full queue makes a run this much slower (x1.6)


def simulate(world: World, tasks: int, every: float, rng: random.Random,
             predictors: dict[str, Callable[[list[Run], SimTask, float, float, float], bool]]) -> list[SimTask]:
    rates = [rng.uniform(0.6, 1.6) / MB for _ in range(world.tables)]  # seconds per byte, per table
    history: dict[int, deque[Run]] = {t: deque(maxlen=HISTORY) for t in range(world.tables)}
    done: list[SimTask] = []
    waiting: deque[SimTask] = deque()
    running: list[tuple[float, int, SimTask]] = []  # (end, id, task)
    arrivals = _arrivals(world, tasks, rng)
    clock = 0.0
    while arrivals or waiting or running:
        # Events up to the next look, then the look.
        clock += every
        while arrivals and arrivals[0].arrived <= clock:
            waiting.append(arrivals.popleft())
        while running and running[0][0] <= clock:
            _, _, task = heapq.heappop(running)
            if not task.timed_out:
                history[task.table].append(Run(task.size, task.true_seconds, task.load))
            done.append(task)
        while waiting and len(running) < world.slots:
            task = waiting.popleft()
            task.started = clock
            task.load = (len(running) + 1) / world.slots
            slow = rng.uniform(2.5, 5.0) if rng.random() < world.slow_share else 1.0
            task.true_seconds = (world.overhead + task.size * rates[task.table]) \
                * (1 + world.load_slowdown * task.load) * math.exp(rng.gauss(0, world.noise_sigma)) * slow
            task.timed_out = task.true_seconds > world.timeout
            task.ended = clock + min(task.true_seconds, world.timeout)
            heapq.heappush(running, (task.ended, task.id, task))
        load = len(running) / world.slots
        for task in [*waiting, *(t for _, _, t in running)]:
            elapsed = clock - task.started if task.started is not None else 0.0
            for name, predict in predictors.items():
                if name not in task.warned_at and predict(list(history[task.table]), task, load, elapsed,
                                                          world.timeout):
                    task.warned_at[name] = clock
    return done


def _arrivals(world: World, tasks: int, rng: random.Random) -> deque[SimTask]:
    """Compactions of random tables, sized log-normally, arriving faster in the busy hours of a day."""
    out: deque[SimTask] = deque()
    clock = 0.0
    mean_gap = 420.0
    for n in range(tasks):
        busy = 1 + 0.8 * math.sin(2 * math.pi * clock / 86400)  # the queue's load varies through the day
        clock += rng.expovariate(busy / mean_gap)
        size = int(min(math.exp(rng.gauss(math.log(400 * MB), 0.8)), 8000 * MB))
        out.append(SimTask(n, rng.randrange(world.tables), size, clock))
    return out


def previous_rule(history: list[Run], task: SimTask, load: float, elapsed: float, timeout: float) -> bool:
    """The rule before: the median seconds per byte of the history x bytes, for running tasks only."""
    if task.started is None or not history:
        return False
    return statistics.median(r.seconds / r.bytes for r in history) * task.size > timeout


def predictor(history: list[Run], task: SimTask, load: float, elapsed: float, timeout: float) -> bool:
    # A running task is judged at the load it started under (as its peers were), a waiting one at today's.
    predicted = forecast(history, task.size, task.load if task.started is not None else load, elapsed, timeout)
    return predicted is not None and predicted.warn


EARLY = 300.0  # a warning this long before the timeout leaves time to act (kill, resize, reschedule)


def report(name: str, done: list[SimTask], world: World) -> tuple[float, float, float]:
    """Prints the predictor's figures; returns (precision, recall, recall with EARLY seconds of warning)."""
    warned = [t for t in done if name in t.warned_at]
    positives = [t for t in done if t.timed_out]
    hits = [t for t in warned if t.timed_out]
    leads = sorted((t.started or 0) + world.timeout - t.warned_at[name] for t in hits)
    precision = len(hits) / len(warned) if warned else float("nan")
    recall = len(hits) / len(positives) if positives else float("nan")
    lead = f"median {statistics.median(leads) / 60:.1f} min, p10 {leads[len(leads) // 10] / 60:.1f} min" \
        if leads else "none"
    early = sum(1 for v in leads if v >= EARLY) / len(positives) if positives else float("nan")
    near = [t for t in warned if not t.timed_out and t.true_seconds > 0.8 * world.timeout]
    print(f"  {name:<15} warned {len(warned):>5}, of which timed out {len(hits):>5}: precision {precision:.3f}, "
          f"recall {recall:.3f} ({early:.3f} warned {EARLY / 60:.0f}+ min ahead); lead time {lead}; "
          f"false alarms that ran past 80% of the timeout: {len(near)}/{len(warned) - len(hits)}")
    return precision, recall, early


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=10000)
    ap.add_argument("--every", type=float, default=30.0, help="seconds between two looks of the monitor")
    ap.add_argument("--seed", type=int, default=12)
    args = ap.parse_args()
    world = World()
    rng = random.Random(args.seed)
    done = simulate(world, args.tasks, args.every, rng, {"predictor": predictor, "previous rule": previous_rule})
    done = done[len(done) // 10:]  # the first tenth warms the tables' histories up
    positives = sum(t.timed_out for t in done)
    waits = [(t.started or 0) - t.arrived for t in done]
    print(f"{len(done)} tasks replayed ({positives} timed out, {100 * positives / len(done):.1f}%), timeout "
          f"{world.timeout:.0f} s, {world.slots} slots, monitor every {args.every:.0f} s, median wait "
          f"{statistics.median(waits):.0f} s, p90 {sorted(waits)[int(0.9 * len(waits))]:.0f} s")
    precision, recall, early = report("predictor", done, world)
    previous = report("previous rule", done, world)
    print(f"judged by precision and recall, both >= 0.85: {precision:.3f} / {recall:.3f} "
          f"({'met' if min(precision, recall) >= 0.85 else 'NOT met'}); vs the previous rule: precision x"
          f"{precision / previous[0]:.2f}, recall x{recall / previous[1]:.2f}, recall {EARLY / 60:.0f}+ min ahead "
          f"x{early / previous[2]:.2f}")


if __name__ == "__main__":
    main()
