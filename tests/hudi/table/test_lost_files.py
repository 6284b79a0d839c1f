"""Lost and damaged files are found: `tms verify` names every file the retained commits wrote that the table
still needs and storage lost (or has empty, or of another size), and a reader that trusts the metadata table's
listing refuses to answer without a file it lists."""
import json

import pytest
from typer.testing import CliRunner

from tms.cli import app
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.lost_files import DamagedFilesError, damaged_files, written_files
from tms.hudi.table.verify import verify_table

runner = CliRunner()


def tms(*args):
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _table(tmp_path, version, *, metadata=False, commits=3):
    """A MERGE_ON_READ table (key id, partitioned by city) with an insert, then updates (log files)."""
    path = tmp_path / "t"
    recs = _jsonl(tmp_path / "r.jsonl", [{"id": i, "ts": 1, "city": ["a", "b"][i % 2]} for i in range(8)])
    args = ["write", path, "--records", recs, "--create", "--table-version", version, "--key", "id",
            "--ordering", "ts", "--partition", "city"]
    code, _, err = tms(*args, *(["--metadata", "files"] if metadata else []))
    assert code == 0, err
    for n in range(2, commits + 1):
        upd = _jsonl(tmp_path / f"u{n}.jsonl", [{"id": n, "ts": n, "city": ["a", "b"][n % 2]}])
        assert tms("write", path, "--records", upd)[0] == 0
    return path


def _latest_base(path):
    table = HudiTable.load(str(path))
    latest = table.timeline.completed_writes()[-1]
    files = [f for f in written_files(table) if not f.is_log]
    return sorted(files, key=lambda f: f.instant)[-1].path, latest


@pytest.mark.parametrize("version", [6, 8])
def test_a_correct_table_has_no_lost_files(tmp_path, version):
    path = _table(tmp_path, version)
    table = HudiTable.load(str(path))
    files = written_files(table)
    # both partitions' base files, and the log files of the updates
    assert sum(not f.is_log for f in files) == 2 and sum(f.is_log for f in files) >= 1
    assert damaged_files(table) == []
    assert tms("verify", path)[:2] == (0, "ok: no differences\n")


@pytest.mark.parametrize("version", [6, 8])
def test_verify_names_the_base_file_the_latest_commit_wrote_when_it_is_removed(tmp_path, version):
    path = tmp_path / "t"
    recs = _jsonl(tmp_path / "r.jsonl", [{"id": i, "ts": 1, "city": "a"} for i in range(4)])
    assert tms("write", path, "--records", recs, "--create", "--table-version", version, "--key", "id",
               "--ordering", "ts", "--partition", "city")[0] == 0
    more = _jsonl(tmp_path / "m.jsonl", [{"id": 9, "ts": 1, "city": "z"}])
    assert tms("write", path, "--records", more, "--op", "insert")[0] == 0  # a new base file, by the latest commit
    victim, latest = _latest_base(path)
    assert victim.startswith("city=z/")
    (path / victim).unlink()
    code, out, _ = tms("verify", path)
    assert code == 1
    assert f"lost_file: {victim}: not found on storage; {latest.timestamp} wrote it" in out.splitlines()
    code, out, _ = tms("verify", path, "--json")
    assert code == 1 and {"check": "lost_file", "where": victim,
                          "detail": f"not found on storage; {latest.timestamp} wrote it"} in json.loads(out)["problems"]


@pytest.mark.parametrize("version", [6, 8])
def test_an_empty_log_file_a_commit_names_is_reported(tmp_path, version):
    path = _table(tmp_path, version)
    table = HudiTable.load(str(path))
    logs = sorted((f for f in written_files(table) if f.is_log), key=lambda f: f.path)
    (path / logs[0].path).write_bytes(b"")
    problems = {p.where: p.detail for p in verify_table(HudiTable.load(str(path))) if p.check == "lost_file"}
    assert problems == {logs[0].path: f"empty log file; {logs[0].instant} wrote {logs[0].size} bytes to it"}


def test_a_base_file_of_another_size_is_reported(tmp_path):
    path = _table(tmp_path, 8, commits=1)
    table = HudiTable.load(str(path))
    victim = next(f for f in written_files(table) if not f.is_log)
    data = (path / victim.path).read_bytes()
    (path / victim.path).write_bytes(data[: len(data) // 2])
    [found] = damaged_files(HudiTable.load(str(path)))
    assert (found.path, found.detail) == (victim.path, f"{len(data) // 2} bytes, {victim.instant} wrote {len(data)}")


@pytest.mark.parametrize("version", [6, 8])
def test_read_refuses_a_table_whose_metadata_table_lists_a_lost_file(tmp_path, version):
    path = _table(tmp_path, version, metadata=True)
    code, out, _ = tms("read", path)
    assert code == 0 and len(out.splitlines()) == 8
    victim, _ = _latest_base(path)
    (path / victim).unlink()
    code, out, err = tms("read", path)
    assert code == 1 and out == ""
    assert err.strip().splitlines() == [err.strip()] and victim in err and "metadata table" in err
    with pytest.raises(DamagedFilesError, match="listed by the metadata table, not found on storage"):
        read_snapshot(HudiTable.load(str(path)))
    code, out, _ = tms("verify", path)
    assert code == 1 and f"lost_file: {victim}" in out
