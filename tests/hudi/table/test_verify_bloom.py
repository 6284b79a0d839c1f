"""`tms verify` checks the record-key bloom filter of every latest base file against the file's keys: a
filter that misses a key makes Hudi's BLOOM index write that record twice (TMS wrote such filters for keys
of UTF-8 length 2 or 3 mod 4 before its MurmurHash tail was fixed)."""
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support import unzip_fixture

from tms.hudi.records.bloom import FOOTER_KEY, dynamic_bloom_filter, keys_not_contained
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.verify import verify_table


@pytest.mark.parametrize("fixture", ["cow_v9_txns_simple_meta", "mor_v8_trips_8i3u1d"])
def test_a_base_file_whose_bloom_filter_misses_keys_is_reported(tmp_path, fixture):
    base = unzip_fixture(fixture, tmp_path)
    table = HudiTable.load(str(base))
    assert [p for p in verify_table(table) if p.check == "bloom_filter"] == []

    victim = next(sl.base_file for sl in table.file_system_view().latest_slices() if sl.base_file)
    path = base / victim.path
    data = pq.read_table(path)
    keys = data.column("_hoodie_record_key").combine_chunks()
    wrong = dynamic_bloom_filter(keys.slice(1))   # the filter of every key but the first
    assert list(keys_not_contained(wrong, keys)) == [0]
    footer = dict(pq.read_metadata(path).metadata)
    footer[FOOTER_KEY] = wrong
    pq.write_table(data.replace_schema_metadata(footer), path)

    problems = [p for p in verify_table(HudiTable.load(str(base))) if p.check == "bloom_filter"]
    assert len(problems) == 1
    assert problems[0].where == victim.path
    assert keys[0].as_py() in problems[0].detail


def test_every_key_of_a_correct_filter_is_contained():
    keys = pa.array([f"k{i}" * (i % 5) for i in range(3000)]).unique()
    assert len(keys_not_contained(dynamic_bloom_filter(keys, num_entries=1000, max_entries=2000), keys)) == 0


def test_a_committed_file_that_cannot_be_read_is_reported_not_a_crash(tmp_path):
    """`tms verify --json` on a table whose latest base file was truncated: one problem naming the file, and the
    answer is still one JSON document (exit 1)."""
    import json

    from typer.testing import CliRunner

    from tms.cli import app
    base = unzip_fixture("mor_v8_trips_8i3u1d", tmp_path)
    table = HudiTable.load(str(base))
    victim = next(sl.base_file for sl in table.file_system_view().latest_slices() if sl.base_file)
    path = base / victim.path
    path.write_bytes(path.read_bytes()[:100])  # truncated: no footer
    result = CliRunner().invoke(app, ["verify", str(base), "--json"])
    assert result.exit_code == 1, result.output
    answer = json.loads(result.output)
    unreadable = [p for p in answer["problems"] if p["check"] == "unreadable_file"]
    assert unreadable and unreadable[0]["where"] == victim.path and not answer["ok"]
