"""`tms schedule PATH --service ... [--option hoodie.key=value ...]`: held plans synced first, then the new
instant printed, or "nothing to do"; one clear line and exit 1 for a bad path or option."""
import pytest
from planning_support import ModelledTable, rec
from typer.testing import CliRunner

from tms.cli import app
from tms.hudi.timeline.serde import parse_cleaner_plan, parse_requested_replace_metadata

runner = CliRunner()


def schedule(*args):
    result = runner.invoke(app, ["schedule", *[str(a) for a in args]])
    return result.exit_code, result.stdout, result.stderr


def _table(tmp_path, **kw) -> ModelledTable:
    t = ModelledTable(tmp_path / "t", version=6, new_log_file_per_commit=True, **kw)
    t.write([rec(i, 10) for i in range(6)], "insert")
    t.write([rec(0, 20)])
    return t


def test_nothing_to_do_exits_zero(tmp_path):
    t = _table(tmp_path)
    for action in ("compaction", "clustering", "clean", "rollback"):
        code, out, err = schedule(t.path, "--service", action)
        assert (code, err) == (0, "") and out.strip() == f"nothing to do: no {action} is due"


def test_action_is_the_older_name_of_service(tmp_path):
    t = _table(tmp_path)
    code, out, err = schedule(t.path, "--action", "clean")
    assert (code, err, out.strip()) == (0, "", "nothing to do: no clean is due")
    code, _, err = schedule(t.path, "--service", "backup")
    assert code == 1 and err.startswith(
        "error: --service must be one of compaction, clustering, clean, rollback, archive, not 'backup'")


def test_held_compaction_is_printed_then_synced_on_the_next_run(tmp_path):
    t = _table(tmp_path)
    late = t.write([rec(3, 30)], leave_inflight=True)
    code, out, err = schedule(t.path, "--service", "compaction",
                              "--option", "hoodie.compact.inline.max.delta.commits=1")
    assert code == 0, err
    first, held = out.strip().splitlines()
    tc = first.split()[0]
    assert first.startswith(f"{tc} compaction planned: 1 operation(s)")
    assert held.strip() == f"held until these delta commits complete or roll back: {late}"
    code, out, _ = schedule(t.path, "--service", "clean")
    assert out.strip().splitlines()[0] == f"{tc} compaction held by delta commits in flight: {late}"
    t.complete(late)
    code, out, _ = schedule(t.path, "--service", "clean")
    assert out.strip().splitlines() == [f"{tc} compaction synced with its late commits: runnable",
                                        "nothing to do: no clean is due"]


def test_options_reach_the_planner(tmp_path):
    t = _table(tmp_path)
    code, out, err = schedule(t.path, "--service", "clustering", "--option", "hoodie.clustering.async.max.commits=1",
                              "--option", "hoodie.clustering.plan.strategy.sort.columns=ts")
    assert code == 0, err
    instant, rest = out.split(" ", 1)
    assert rest.startswith("clustering planned: 3 operation(s)")
    meta = parse_requested_replace_metadata(t.table().timeline.read_plan(instant))
    assert meta.clustering_plan.strategy.strategy_params == {"hoodie.clustering.plan.strategy.sort.columns": "ts"}


@pytest.mark.parametrize("args,message", [
    (["--service", "compaction", "--option", "hoodie.unknown=1"], "error: --option hoodie.unknown: "),
    (["--service", "compaction", "--option", "hoodie.compact.inline.max.delta.commits=zero"],
     "error: --option hoodie.compact.inline.max.delta.commits: "),
    (["--service", "compaction", "--option", "no-equals-sign"],
     "error: --option 'no-equals-sign' is not hoodie.key=value"),
    (["--service", "defrag"],
     "error: --service must be one of compaction, clustering, clean, rollback, archive, not 'defrag'"),
])
def test_bad_options_exit_one_with_one_line(tmp_path, args, message):
    t = _table(tmp_path)
    code, out, err = schedule(t.path, *args)
    assert code == 1 and out == "" and err.startswith(message) and len(err.strip().splitlines()) == 1


def test_bad_path_and_wrong_table_type_exit_one(tmp_path):
    code, _, err = schedule(tmp_path / "nowhere", "--service", "clean")
    assert code == 1 and err.startswith("error: no Hudi table at") and len(err.strip().splitlines()) == 1
    cow = ModelledTable(tmp_path / "cow", table_type="COPY_ON_WRITE")
    code, _, err = schedule(cow.path, "--service", "compaction")
    assert code == 1 and err.strip() == ("error: TMS cannot run compaction on table cow: "
                                         "compaction applies to MERGE_ON_READ tables; cow is COPY_ON_WRITE")


def test_clean_plan_written_by_the_command_reads_back(tmp_path):
    cow = ModelledTable(tmp_path / "cow", table_type="COPY_ON_WRITE", partitioned=False)
    for ts in range(10, 14):
        cow.write([rec(0, ts)])
    code, out, err = schedule(cow.path, "--service", "clean",
                              "--option", "hoodie.cleaner.policy=KEEP_LATEST_FILE_VERSIONS",
                              "--option", "hoodie.cleaner.fileversions.retained=1")
    assert code == 0, err
    instant = out.split()[0]
    plan = parse_cleaner_plan(cow.table().timeline.read_plan(instant))
    assert plan.policy == "KEEP_LATEST_FILE_VERSIONS" and len(plan.file_paths_to_be_deleted_per_partition[""]) == 3


def test_archive_prints_what_hudis_rule_archives_and_writes_nothing(tmp_path):
    t = ModelledTable(tmp_path / "t", "COPY_ON_WRITE", version=8)
    for n in range(5):
        t.write([rec(n, 10)])
    small = ["--option", "hoodie.keep.min.commits=2", "--option", "hoodie.keep.max.commits=4",
             "--option", "hoodie.cleaner.commits.retained=1"]
    names = sorted(p.name for p in (tmp_path / "t" / ".hoodie" / "timeline").iterdir())
    code, out, err = schedule(t.path, "--service", "archive", *small)
    completed = [i.timestamp for i in t.table().timeline.completed()]
    assert len(completed) == 5 and (code, err) == (0, "") and out.strip().startswith(
        f"archive due: 3 instant(s) through {completed[2]} (Hudi's archival rule)")  # down to 2 commits
    assert sorted(p.name for p in (tmp_path / "t" / ".hoodie" / "timeline").iterdir()) == names
    code, out, _ = schedule(t.path, "--service", "archive")  # Hudi's defaults: 30 commits
    assert (code, out.strip()) == (0, "nothing to do: no archive is due")
