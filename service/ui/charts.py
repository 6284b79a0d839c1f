"""The dashboard's charts as geometry: each function turns data into the rectangles, ticks and labels an SVG
template draws (no chart library, nothing to load). Coordinates are in SVG user units."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from tms import display

WIDTH = 960
GUTTER = 150  # room for lane labels left of the plot
RIGHT_MARGIN = 12
LANE_HEIGHT = 24
AXIS_HEIGHT = 28
TICK_CHAR_WIDTH = 7.0  # an 11px DejaVu Sans character, a little over its average
PLOT_HEIGHT = 160  # bar charts


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    css: str  # a class the stylesheet colours (a state or a series)
    title: str  # the tooltip


@dataclass(frozen=True)
class Tick:
    x: float
    label: str
    anchor: str = "middle"  # SVG text-anchor: the first and last ticks of a time axis stay inside the chart


@dataclass(frozen=True)
class Lane:
    y: float  # baseline of its label
    label: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    ticks: list[Tick] = field(default_factory=list)
    lanes: list[Lane] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)  # (css, label)
    axis_y: float = 0.0  # where the x axis is drawn
    y_max_label: str = ""
    gutter: int = GUTTER  # where the plot starts
    note: str = ""  # said under the chart: the zone of a time axis


@dataclass(frozen=True)
class TimelineEntry:
    """One instant: requested at `start`, completed at `end` (None: still pending)."""

    instant: str
    lane: str
    state: str  # requested | inflight | completed
    start: datetime
    end: datetime | None


def _time_label(moment: datetime, span: timedelta) -> str:
    if span <= timedelta(minutes=10):
        return moment.strftime("%H:%M:%S.%f")[:-3]
    if span <= timedelta(days=2):
        return moment.strftime("%m-%d %H:%M:%S")
    return moment.strftime("%Y-%m-%d %H:%M")


def timeline_chart(entries: Sequence[TimelineEntry]) -> Chart:
    """Instants on a time axis, one lane per action, each a bar from requested to completed; a pending
    instant's bar runs to the latest time on the chart."""
    if not entries:
        return Chart(width=WIDTH, height=AXIS_HEIGHT, bars=[])
    entries = [replace(e, start=display.local(e.start), end=display.local(e.end) if e.end else None) for e in entries]
    lanes = sorted({e.lane for e in entries})
    first = min(e.start for e in entries)
    last = max(max(e.start, e.end or e.start) for e in entries)
    span = max(last - first, timedelta(milliseconds=1))
    plot = WIDTH - GUTTER - RIGHT_MARGIN

    def x_of(moment: datetime) -> float:
        return GUTTER + (moment - first) / span * plot

    bars = []
    for entry in entries:
        lane_y = lanes.index(entry.lane) * LANE_HEIGHT
        x1 = x_of(entry.start)
        x2 = x_of(entry.end) if entry.end else x_of(last)
        done = f"completed {display.moment(entry.end)}" if entry.end else f"still {entry.state}"
        bars.append(Bar(x=round(x1, 1), y=lane_y + 4, width=round(max(x2 - x1, 3.0), 1), height=LANE_HEIGHT - 8,
                        css=entry.state,
                        title=f"{entry.instant} {entry.lane} {entry.state}: requested "
                              f"{display.moment(entry.start)}, {done}"))
    axis_y = len(lanes) * LANE_HEIGHT
    anchors = ["start", "middle", "middle", "middle", "end"]
    ticks = [Tick(x=round(x_of(first + span * i / 4), 1), label=_time_label(first + span * i / 4, span),
                  anchor=anchors[i]) for i in range(5)]
    return Chart(width=WIDTH, height=int(axis_y + AXIS_HEIGHT), bars=bars, ticks=ticks,
                 lanes=[Lane(y=i * LANE_HEIGHT + LANE_HEIGHT * 0.68, label=lane) for i, lane in enumerate(lanes)],
                 legend=[("requested", "requested"), ("inflight", "inflight"), ("completed", "completed")],
                 axis_y=axis_y, note=f"times in {display.zone_label(last)}")


def _columns(counts: Sequence[tuple[str, dict[str, int]]], series: Sequence[str], *, width: int = WIDTH,
             gutter: int = GUTTER, value: Callable[[int], str] = str) -> Chart:
    """Stacked columns: one per (label, {series: count}); series stacked in the given order. `value` says a
    count (its tooltip and the top of the scale)."""
    top = max((sum(c.values()) for _, c in counts), default=0)
    n = max(len(counts), 1)
    plot = width - gutter - RIGHT_MARGIN
    slot = plot / n
    bars = []
    for i, (label, by_series) in enumerate(counts):
        base = float(PLOT_HEIGHT)
        for name in series:
            amount = by_series.get(name, 0)
            if not amount:
                continue
            height = amount / top * PLOT_HEIGHT
            base -= height
            bars.append(Bar(x=round(gutter + i * slot + slot * 0.1, 1), y=round(base, 1),
                            width=round(max(slot * 0.8, 1.0), 1), height=round(height, 1), css=name,
                            title=f"{label}: {value(amount)} {name}"))
    # Label every column whose label fits beside its neighbours' (at most 8, or 5 on a narrow chart).
    longest = max((len(label) for label, _ in counts), default=0)
    every = max(1, math.ceil(n / (8 if width >= WIDTH else 5)), math.ceil((longest * TICK_CHAR_WIDTH + 12) / slot))
    ticks = [_inside(Tick(x=round(gutter + i * slot + slot / 2, 1), label=label), width)
             for i, (label, _) in enumerate(counts) if i % every == 0]
    used = [name for name in series if any(c.get(name) for _, c in counts)]
    return Chart(width=width, height=PLOT_HEIGHT + AXIS_HEIGHT, bars=bars, ticks=ticks, axis_y=PLOT_HEIGHT,
                 legend=[(name, name) for name in used] if len(series) > 1 else [],
                 y_max_label=value(top) if top else "", gutter=gutter)


def _inside(tick: Tick, width: int) -> Tick:
    """A centred label that would run past an edge of the chart ends (or starts) at that edge instead."""
    half = len(tick.label) * TICK_CHAR_WIDTH / 2
    if tick.x + half > width - 2:
        return replace(tick, x=float(width - 2), anchor="end")
    if tick.x - half < 2:
        return replace(tick, x=2.0, anchor="start")
    return tick


# A chart in one of two columns is drawn narrower, so that its 11px labels stay about 11px on the page.
HALF_WIDTH = 480
HALF_GUTTER = 64  # room for the scale's top value ("812.7 KB")


def stacked_columns(counts: Sequence[tuple[str, dict[str, int]]], series: Sequence[str],
                    value: Callable[[int], str] = str, *, half: bool = False) -> Chart:
    """Stacked columns across the page, or in one of two columns (`half`)."""
    if half:
        return _columns(counts, series, value=value, width=HALF_WIDTH, gutter=HALF_GUTTER)
    return _columns(counts, series, value=value)


HISTOGRAM_WIDTH = HALF_WIDTH
HISTOGRAM_GUTTER = 40


def histogram(values: Sequence[float], *, bins: int, label: Callable[[float], str], integer: bool = False,
              css: str = "series") -> Chart:
    """How many values fall in each of `bins` equal ranges from 0 to the largest value (integer: one
    column per whole number while they fit)."""
    if not values:
        return Chart(width=HISTOGRAM_WIDTH, height=PLOT_HEIGHT + AXIS_HEIGHT, bars=[], axis_y=PLOT_HEIGHT,
                     gutter=HISTOGRAM_GUTTER)
    top = max(values)
    if integer and top + 1 <= bins:
        edges = [float(i) for i in range(int(top) + 2)]
        names = [label(i) for i in range(int(top) + 1)]
    else:
        step = (top or 1) / bins
        edges = [i * step for i in range(bins + 1)]
        edges[-1] = math.nextafter(top, math.inf)
        names = [f"{label(edges[i])}-{label(edges[i + 1])}" for i in range(bins)]
    counts = [0] * (len(edges) - 1)
    for value in values:
        index = next((i for i in range(len(counts)) if value < edges[i + 1]), len(counts) - 1)
        counts[index] += 1
    return _columns([(names[i], {css: counts[i]}) for i in range(len(counts))], [css], width=HISTOGRAM_WIDTH,
                    gutter=HISTOGRAM_GUTTER)
