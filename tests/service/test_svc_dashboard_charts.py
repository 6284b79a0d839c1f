"""The dashboard's chart geometry: histograms count every value once, the timeline places instants in time."""
from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from service.ui.charts import PLOT_HEIGHT, TimelineEntry, histogram, stacked_columns, timeline_chart


def _counts(chart) -> list[int]:
    return [int(bar.title.split(": ")[1].split()[0]) for bar in chart.bars]


def test_histogram_counts_every_value_in_its_bin():
    sizes = [0, 10, 10, 55, 99, 100]
    chart = histogram(sizes, bins=4, label=lambda v: f"{v:.0f}")
    assert sum(_counts(chart)) == len(sizes)
    assert [bar.title.split(":")[0] for bar in chart.bars][0] == "0-25"
    assert max(bar.height for bar in chart.bars) == PLOT_HEIGHT  # the fullest bin is full height
    logs = histogram([0, 0, 1, 3], bins=16, label=lambda v: str(int(v)), integer=True)
    assert [(bar.title) for bar in logs.bars] == ["0: 2 series", "1: 1 series", "3: 1 series"]
    assert histogram([], bins=4, label=str).bars == []


def test_timeline_draws_each_instant_from_requested_to_completed():
    start = datetime(2025, 1, 1, tzinfo=UTC)
    entries = [TimelineEntry("20250101000000000", "deltacommit", "completed", start, start + timedelta(seconds=10)),
               TimelineEntry("20250101000100000", "compaction", "requested", start + timedelta(minutes=1), None),
               TimelineEntry("20250101000200000", "deltacommit", "completed", start + timedelta(minutes=2),
                             start + timedelta(minutes=4))]
    chart = timeline_chart(entries)
    assert [lane.label for lane in chart.lanes] == ["compaction", "deltacommit"]
    first, pending, last = chart.bars
    assert first.x == 150 and last.x + last.width == chart.width - 12  # the axis spans first to last time
    assert last.width > first.width and pending.css == "requested" and "still requested" in pending.title
    assert pending.y < first.y == last.y  # lanes by action
    assert [t.anchor for t in chart.ticks] == ["start", "middle", "middle", "middle", "end"]
    assert chart.ticks[0].label == "00:00:00.000" and chart.note == "times in UTC"
    assert "requested 2025-01-01 00:00:00 UTC, completed 2025-01-01 00:00:10 UTC" in first.title


def test_the_time_axis_is_in_the_display_zone_and_says_so(monkeypatch):
    monkeypatch.setenv("TMS_DISPLAY_TIMEZONE", "America/New_York")
    start = datetime(2025, 1, 1, tzinfo=UTC)
    chart = timeline_chart([TimelineEntry("20250101000000000", "deltacommit", "completed", start,
                                          start + timedelta(seconds=10))])
    assert chart.ticks[0].label == "19:00:00.000" and chart.note == "times in EST (America/New_York)"


def test_stacked_columns_stack_series_in_order():
    chart = stacked_columns([("00:00", {"FAILED": 1, "SUCCEEDED": 3}), ("01:00", {})], ["SUCCEEDED", "FAILED"])
    succeeded, failed = chart.bars
    assert succeeded.css == "SUCCEEDED" and failed.y + failed.height == succeeded.y
    assert succeeded.height + failed.height == PLOT_HEIGHT and chart.y_max_label == "4"
    assert chart.legend == [("SUCCEEDED", "SUCCEEDED"), ("FAILED", "FAILED")]


def _extent(tick, char_width: float = 7.0) -> tuple[float, float]:
    width = len(tick.label) * char_width
    start = {"start": tick.x, "middle": tick.x - width / 2, "end": tick.x - width}[tick.anchor]
    return start, start + width


def test_every_label_of_a_histogram_fits_inside_it_units_and_all():
    """The file-group sizes of a table (the issue's "731.5 KB-812.7" was the last label cut at the edge)."""
    from tms.hudi.table.inspect import human_size
    chart = histogram([i * 83_213 for i in range(1, 11)], bins=10, label=lambda v: human_size(int(v)), css="size")
    assert chart.ticks and all(0 <= _extent(t)[0] and _extent(t)[1] <= chart.width for t in chart.ticks)
    assert all(re.fullmatch(r"[\d.]+ [KMG]?B-[\d.]+ [KMG]?B", t.label) for t in chart.ticks), chart.ticks
    spans = sorted(_extent(t) for t in chart.ticks)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), "labels overlap"
