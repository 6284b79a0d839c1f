"""The memory a job is sized for covers what a Python worker really takes: compaction tasks merging file
groups of the benchmark's table (repeated strings: its rows decode to about 9x their parquet bytes) peak
within `python_task_memory_mb` of the file group's bytes on storage, measured in a process of its own."""
import json
import subprocess
import sys

from execute.execute_support import plan_compaction

from bench.trips_table import build_trips_table
from tms.hudi.table.hudi_table import HudiTable
from tms.planning.stats import plan_stats
from worker.sizing import MB, python_task_memory_mb

MERGE_FILE_GROUPS = """
import json, re, sys
from tms.execute.compaction import CompactionExecutor, compact_file_group
from tms.execute.fencing import no_fence
from tms.hudi.table.hudi_table import HudiTable
table = HudiTable.load(sys.argv[1])
executor = CompactionExecutor(table, table.timeline.get(sys.argv[2]))
for n, task in enumerate(executor.start(no_fence)):  # one at a time: the peak is the largest group's
    compact_file_group(task, f"0-0-{n}")
# VmHWM: this process's own peak (getrusage's maxrss keeps the peak of the process that exec'd it)
status = open("/proc/self/status").read()
print(json.dumps({"peak_mb": int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)) / 1024}))
"""


def test_a_compaction_task_peaks_within_the_python_memory_it_is_sized_for(tmp_path):
    path = tmp_path / "trips"
    build_trips_table(path, 1_600_000, 0.1, file_rows=400_000)  # 4 cities: 4 file groups
    table = HudiTable.load(str(path))
    instant = plan_compaction(table)
    stats = plan_stats(HudiTable.load(str(path)), instant)
    assert stats.largest_file_group_bytes > 8 * MB

    done = subprocess.run([sys.executable, "-c", MERGE_FILE_GROUPS, str(path), instant], capture_output=True,
                          text=True, check=True)
    peak_mb = json.loads(done.stdout.splitlines()[-1])["peak_mb"]

    sized_mb = python_task_memory_mb(stats.largest_file_group_bytes)
    assert peak_mb <= sized_mb, f"a {stats.largest_file_group_bytes / MB:.1f} MB file group peaked at {peak_mb:.0f} MB"
    # The estimate is a bound, not a blanket: it stays within 2x of what the merge took.
    assert sized_mb <= 2 * peak_mb, f"sized {sized_mb} MB for a {peak_mb:.0f} MB peak"
