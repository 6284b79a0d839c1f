"""Tests of tms.hudi.timeline.serde against the Java-written fixture tables, plus round trips and bad input."""

import copy
import dataclasses
import io
import json
import shutil
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tms.hudi.timeline import serde
from tms.hudi.timeline.serde import (
    ActionInstant,
    CleanerPlan,
    CleanFileInfo,
    CleanMetadata,
    CleanPartitionMetadata,
    ClusteringGroup,
    ClusteringPlan,
    ClusteringStrategy,
    CommitMetadata,
    CompactionOperation,
    CompactionPlan,
    CompactionStrategy,
    MetadataFormatError,
    RequestedReplaceMetadata,
    SliceInfo,
    WriteStat,
)

MODEL = "org.apache.hudi.avro.model."


@pytest.fixture(scope="session")
def tables(fixtures_root) -> Path:
    """The fixture tables, unzipped once; each zip holds one table folder."""
    return fixtures_root


def _table_version(table: Path) -> int:
    for line in (table / ".hoodie" / "hoodie.properties").read_text().splitlines():
        if line.startswith("hoodie.table.version="):
            return int(line.split("=", 1)[1])
    raise AssertionError(f"no table version in {table}")


def _timeline_dir(table: Path) -> Path:
    return table / ".hoodie" / ("timeline" if _table_version(table) >= 8 else "")


def _instant(name: str) -> tuple[str, str]:
    """(action, state) of a timeline file name."""
    parts = name.split(".")
    if parts[1:] == ["inflight"]:  # v6 and v8 name a commit's inflight file <T>.inflight
        return "commit", "inflight"
    return parts[1], parts[2] if len(parts) > 2 else "completed"


def _timeline(table: Path, action: str | None = None, state: str | None = None) -> list[Path]:
    files = sorted(p for p in _timeline_dir(table).iterdir() if p.is_file() and p.name != "hoodie.properties")
    return [
        p
        for p in files
        if (action is None or _instant(p.name)[0] == action) and (state is None or _instant(p.name)[1] == state)
    ]


def _commit_files(table: Path) -> list[Path]:
    """Files holding commit metadata: every state of commit, deltacommit and replacecommit except the
    requested replacecommit (a requested-replace Avro record)."""
    return [
        p
        for p in _timeline(table)
        if _instant(p.name)[0] in ("commit", "deltacommit", "replacecommit")
        and _instant(p.name) != ("replacecommit", "requested")
    ]


def _all_commit_files(tables: Path) -> list[Path]:
    return [p for table in sorted(tables.iterdir()) for p in _commit_files(table)]


def _records(data: bytes) -> tuple[str, list[dict]]:
    """Read with plain fastavro: the writer schema's record name and the records."""
    reader = fastavro.reader(io.BytesIO(data))
    records = list(reader)
    return reader.writer_schema["name"], records


def _writer_schema(data: bytes) -> dict:
    return fastavro.reader(io.BytesIO(data)).writer_schema


def _rows(table: Path) -> list[dict]:
    from hudi import HudiTableBuilder

    batches = HudiTableBuilder.from_base_uri(str(table)).build().read()
    rows = pa.Table.from_batches(batches).to_pylist() if batches else []
    return sorted(rows, key=lambda row: row["_hoodie_record_key"])


# --- commit metadata ----------------------------------------------------------------------------------------


def test_v6_delta_commit_with_log_write(tables):
    data = (tables / "v6_trips_8i1u/.hoodie/20250331030645735.deltacommit").read_bytes()
    meta = serde.parse_commit_metadata(data)

    assert meta.operation_type == "UPSERT_PREPPED"
    assert not meta.compacted and not meta.is_replace
    assert list(meta.partition_to_write_stats) == ["city=san_francisco"]
    [stat] = meta.write_stats()
    log = ".d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.1_0-26-85"
    assert stat.file_id == "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0"
    assert stat.path == f"city=san_francisco/{log}"
    assert stat.log_files == [log]
    assert stat.base_file == "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_0-13-60_20250331030642808.parquet"
    assert stat.prev_commit == "20250331030642808"
    assert (stat.num_writes, stat.num_update_writes, stat.num_inserts, stat.file_size_in_bytes) == (1, 1, 0, 1148)
    assert (stat.log_version, stat.log_offset) == (1, 0)
    assert stat.runtime_stats == serde.RuntimeStats(total_scan_time=0, total_upsert_time=296, total_create_time=0)
    assert meta.extra_metadata["_hoodie.spark.sql.writes.prepped"] == "true"
    schema = meta.schema()
    assert schema["name"] == "v6_trips_8i1u_record"
    assert [f["name"] for f in schema["fields"]] == ["ts", "uuid", "rider", "driver", "fare", "city"]


def test_v6_replace_commit(tables):
    data = (tables / "v6_simplekeygen_nonhivestyle_overwritetable/.hoodie/20240707001303088.replacecommit").read_bytes()
    meta = serde.parse_commit_metadata(data)

    assert meta.is_replace
    assert meta.operation_type == "INSERT_OVERWRITE_TABLE"
    assert meta.partition_to_replace_file_ids == {
        "30": ["d398fae1-c0e6-4098-8124-f55f7098bdba-0"],
        "20": ["88163884-fef0-4aab-865d-c72327a8a1d5-0"],
        "10": ["4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0"],
    }
    assert meta.written_file_paths() == [
        "30/ebcb261d-62d3-4895-90ec-5b3c9622dff4-0_0-111-154_20240707001303088.parquet"
    ]
    assert meta.write_stats()[0].prev_commit == "null"  # Java's marker of a new file group


def test_v6_replace_commit_inflight_is_plain_commit_metadata(tables):
    data = (
        tables / "v6_simplekeygen_nonhivestyle_overwritetable/.hoodie/20240707001303088.replacecommit.inflight"
    ).read_bytes()
    meta = serde.parse_commit_metadata(data)
    assert not meta.is_replace
    assert meta.extra_metadata == {}
    assert [(s.file_id, s.path, s.num_inserts) for s in meta.write_stats()] == [("", None, 1)]


def test_v8_compaction_commit(tables):
    data = (tables / "v8_trips_8i3u1d/.hoodie/timeline/20251220210129235_20251220210129883.commit").read_bytes()
    meta = serde.parse_commit_metadata(data)

    assert meta.compacted and meta.operation_type == "COMPACT" and not meta.is_replace
    stats = {s.file_id: s for s in meta.write_stats()}
    chennai = stats["6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0"]
    assert chennai.partition_path == "city=chennai"
    assert chennai.path == "city=chennai/6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_0-1112-3190_20251220210129235.parquet"
    assert chennai.prev_base_file == "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_2-986-2794_20251220210108078.parquet"
    assert (chennai.total_log_files_compacted, chennai.total_log_size_compacted, chennai.total_log_records) == (
        2,
        2117,
        2,
    )
    assert chennai.log_files is None
    assert {s.total_log_files_compacted for s in stats.values()} == {1, 2}
    assert meta.schema()["name"] == "v8_trips_8i3u1d_record"


def test_v8_delta_commit(tables):
    data = (tables / "v8_trips_8i3u1d/.hoodie/timeline/20251220210130911_20251220210131755.deltacommit").read_bytes()
    [stat] = serde.parse_commit_metadata(data).write_stats()
    log = ".8aa68f7e-afd6-4c94-b86c-8a886552e08d-0_20251220210130911.log.1_0-1139-3316"
    assert stat.log_files == [log]
    assert stat.path == f"city=sao_paulo/{log}"
    assert stat.base_file == ""  # v8 log files do not belong to a base file by name


def test_written_files_exist(tables):
    checked = 0
    for path in _all_commit_files(tables):
        if _instant(path.name)[1] != "completed":
            continue
        meta = serde.parse_commit_metadata(path.read_bytes())
        table = path.parents[1] if path.parent.name == ".hoodie" else path.parents[2]
        for stat in meta.write_stats():
            assert (table / stat.path).is_file(), stat.path
            assert stat.path.startswith(stat.partition_path), stat.path
            checked += 1
    assert checked >= 20


def test_empty_requested_commit_files(tables):
    empty = [p for p in _all_commit_files(tables) if _instant(p.name)[1] == "requested"]
    assert empty
    for path in empty:
        assert serde.parse_commit_metadata(path.read_bytes()) == CommitMetadata()


def test_commit_metadata_round_trip(tables):
    """Every commit-like file: parse -> serialise -> parse is equal; v6 JSON is byte for byte what Java wrote;
    v8 Avro reads, with plain fastavro, as the same record under the same writer schema."""
    files = _all_commit_files(tables)
    assert len(files) > 40
    for path in files:
        data = path.read_bytes()
        if not data:
            continue
        table = path.parents[1] if path.parent.name == ".hoodie" else path.parents[2]
        version = _table_version(table)
        meta = serde.parse_commit_metadata(data)
        out = serde.serialize_commit_metadata(meta, version)
        assert serde.parse_commit_metadata(out) == meta, path
        if version == 6:
            assert out == data, path
        else:
            assert _records(out) == _records(data), path
            assert _writer_schema(out) == _writer_schema(data), path
            record = "HoodieReplaceCommitMetadata" if path.name.endswith(".replacecommit") else "HoodieCommitMetadata"
            assert _records(out)[0] == MODEL + record


def test_the_partitions_a_commit_names_read_alone_are_those_of_its_whole_metadata(tables):
    """read_commit_partitions (write statistics projected away) names the partitions parse_commit_metadata
    finds, for every commit-like file Java wrote (v6 JSON, v8 and v9 Avro, replace commits)."""
    files = [p for p in _all_commit_files(tables) if p.read_bytes()]
    assert len(files) > 40 and any(p.name.endswith(".replacecommit") for p in files)
    for path in files:
        data = path.read_bytes()
        meta = serde.parse_commit_metadata(data)
        whole = {p or "" for p in meta.partition_to_write_stats} | {
            p or "" for p in meta.partition_to_replace_file_ids or {}}
        assert serde.read_commit_partitions(data) == whole, path
    assert serde.read_commit_partitions(b"") == set()
    for bad in (b"\x00\x01garbage", b"{not json", b"[1, 2]", b'{"partitionToWriteStats": [1]}',
                b"Obj\x01" + bytes(range(200))):
        with pytest.raises(MetadataFormatError):
            serde.read_commit_partitions(bad)


def test_v8_replace_commit_is_replace_commit_metadata():
    stat = WriteStat(file_id="f1-0", path="p/f1-0_0-1-1_002.parquet", partition_path="p", prev_commit="null")
    meta = CommitMetadata(
        partition_to_write_stats={"p": [stat]},
        extra_metadata={"schema": "{}"},
        operation_type="CLUSTER",
        partition_to_replace_file_ids={"p": ["f0-0"]},
    )
    for version in (8, 9):
        data = serde.serialize_commit_metadata(meta, version)
        name, [record] = _records(data)
        assert name == MODEL + "HoodieReplaceCommitMetadata"
        assert record["partitionToReplaceFileIds"] == {"p": ["f0-0"]}
        assert record["partitionToWriteStats"]["p"][0]["fileId"] == "f1-0"
        assert serde.parse_commit_metadata(data) == meta

    nothing_replaced = dataclasses.replace(meta, partition_to_replace_file_ids={})
    for version in (6, 8):
        assert serde.parse_commit_metadata(serde.serialize_commit_metadata(nothing_replaced, version)).is_replace


def test_v6_json_of_a_built_commit():
    meta = CommitMetadata(
        partition_to_write_stats={
            "p": [WriteStat(file_id="f-0", path="p/.f-0_001.log.1_0-1-1", log_files=[".f-0_001.log.1_0-1-1"])]
        },
        operation_type="UPSERT",
    )
    doc = json.loads(serde.serialize_commit_metadata(meta, 6))
    stat = doc["partitionToWriteStats"]["p"][0]
    assert list(doc) == ["partitionToWriteStats", "compacted", "extraMetadata", "operationType"]
    assert stat["numWrites"] == 0 and stat["runtimeStats"] is None
    assert stat["logFiles"] == [".f-0_001.log.1_0-1-1"] and stat["recordsStats"] == {"val": None}
    assert "prevBaseFile" not in stat  # Hudi 0.x has no such field: written only when set


def test_unsupported_table_version():
    with pytest.raises(ValueError, match="unsupported table version"):
        serde.serialize_commit_metadata(CommitMetadata(), 5)


# --- compaction plan ----------------------------------------------------------------------------------------


def test_v8_compaction_plan(tables):
    data = (tables / "v8_trips_8i3u1d/.hoodie/timeline/20251220210129235.compaction.requested").read_bytes()
    plan = serde.parse_compaction_plan(data)

    assert plan.version == 2 and plan.strategy is None and plan.preserve_hoodie_metadata is False
    assert plan.missing_schedule_partitions == []
    assert plan.extra_metadata == {"_hoodie.spark.sql.writes.prepped": "true"}
    ops = {op.file_id: op for op in plan.operations}
    assert list(ops) == [
        "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0",
        "036ded81-9ed4-479f-bcea-7145dfa0079b-0",
        "8aa68f7e-afd6-4c94-b86c-8a886552e08d-0",
    ]
    chennai = ops["6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0"]
    assert chennai.partition_path == "city=chennai"
    assert chennai.base_instant_time == "20251220210108078"
    assert chennai.data_file_path == "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_2-986-2794_20251220210108078.parquet"
    assert chennai.delta_file_paths == [
        ".6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_20251220210127080.log.1_0-1072-3078",
        ".6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_20251220210128625.log.1_0-1097-3150",
    ]
    assert chennai.metrics["TOTAL_LOG_FILES"] == 2.0 and chennai.metrics["TOTAL_LOG_FILES_SIZE"] == 2117.0
    assert ops["036ded81-9ed4-479f-bcea-7145dfa0079b-0"].delta_file_paths == [
        ".036ded81-9ed4-479f-bcea-7145dfa0079b-0_20251220210123755.log.1_0-1022-2928"
    ]
    assert ops["8aa68f7e-afd6-4c94-b86c-8a886552e08d-0"].delta_file_paths == [
        ".8aa68f7e-afd6-4c94-b86c-8a886552e08d-0_20251220210125441.log.1_0-1047-3000"
    ]
    table = tables / "v8_trips_8i3u1d"
    for op in plan.operations:
        for name in [op.data_file_path, *op.delta_file_paths]:
            assert (table / op.partition_path / name).is_file()

    out = serde.serialize_compaction_plan(plan)
    assert serde.parse_compaction_plan(out) == plan
    assert _records(out) == _records(data)
    assert _writer_schema(out) == _writer_schema(data)


# --- clustering plan ----------------------------------------------------------------------------------------


def _without_missing_schedule_partitions(schema: dict) -> dict:
    schema = copy.deepcopy(schema)
    plan = schema["fields"][1]["type"][1]
    plan["fields"] = [f for f in plan["fields"] if f["name"] != "missingSchedulePartitions"]
    return schema


def test_v6_requested_replace_without_plan(tables):
    data = (
        tables / "v6_simplekeygen_nonhivestyle_overwritetable/.hoodie/20240707001303088.replacecommit.requested"
    ).read_bytes()
    meta = serde.parse_requested_replace_metadata(data)
    assert meta == RequestedReplaceMetadata(operation_type=None, clustering_plan=None, extra_metadata={}, version=None)

    out = serde.serialize_requested_replace_metadata(meta)
    assert serde.parse_requested_replace_metadata(out) == meta
    # Java 0.x wrote the clustering plan schema without the field Hudi 1.x added
    assert _without_missing_schedule_partitions(_writer_schema(out)) == _writer_schema(data)


def _clustering_plan() -> RequestedReplaceMetadata:
    slices = [
        SliceInfo(
            file_id=f"f{i}-0",
            partition_path="city=chennai",
            data_file_path=f"f{i}-0_0-1-1_001.parquet",
            delta_file_paths=[f".f{i}-0_002.log.1_0-1-1"],
        )
        for i in range(2)
    ]
    plan = ClusteringPlan(
        input_groups=[ClusteringGroup(slices=slices, metrics={"TOTAL_FILE_SIZE": 1234.0}, num_output_file_groups=1)],
        strategy=ClusteringStrategy(
            strategy_class_name="org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy",
            strategy_params={"hoodie.clustering.plan.strategy.sort.columns": "ts"},
        ),
        preserve_hoodie_metadata=True,
        missing_schedule_partitions=[],
    )
    return RequestedReplaceMetadata(operation_type="CLUSTER", clustering_plan=plan)


def test_clustering_plan_round_trip():
    meta = _clustering_plan()
    data = serde.serialize_requested_replace_metadata(meta)
    assert serde.parse_requested_replace_metadata(data) == meta

    name, [record] = _records(data)
    assert name == MODEL + "HoodieRequestedReplaceMetadata"
    group = record["clusteringPlan"]["inputGroups"][0]
    assert group["slices"][1]["fileId"] == "f1-0"
    assert group["slices"][0]["deltaFilePaths"] == [".f0-0_002.log.1_0-1-1"]
    strategy = record["clusteringPlan"]["strategy"]
    assert strategy["strategyParams"] == {"hoodie.clustering.plan.strategy.sort.columns": "ts"}
    assert record["clusteringPlan"]["preserveHoodieMetadata"] is True


# --- a plan's extra metadata alone ---------------------------------------------------------------------------

_PLAN_SUFFIXES = (".compaction.requested", ".clustering.requested", ".replacecommit.requested")


def _full_parse_scope(data: bytes) -> serde.PlanExtraMetadata | None:
    """What read_plan_extra_metadata should answer, from the full parse of the plan."""
    name, _ = _records(data)
    if name == MODEL + "HoodieCompactionPlan":
        plan = serde.parse_compaction_plan(data)
    else:
        plan = serde.parse_requested_replace_metadata(data).clustering_plan
        if plan is None:
            return None
    return serde.PlanExtraMetadata(plan.extra_metadata, plan.missing_schedule_partitions)


def test_plan_extra_metadata_of_java_written_plans(tables):
    plans = sorted(p for p in tables.rglob("*.requested")
                   if p.name.endswith(_PLAN_SUFFIXES) and not p.name.startswith("._") and p.stat().st_size)
    # compaction plans of data and metadata tables, clustering plans, and insert_overwrite's requests without one
    kinds = {(p.name.split(".")[1], _full_parse_scope(p.read_bytes()) is None) for p in plans}
    assert {("compaction", False), ("clustering", False), ("replacecommit", True)} <= kinds
    for path in plans:
        data = path.read_bytes()
        assert serde.read_plan_extra_metadata(data) == _full_parse_scope(data), path
    prepped = tables / "v8_trips_8i3u1d/.hoodie/timeline/20251220210129235.compaction.requested"
    assert serde.read_plan_extra_metadata(prepped.read_bytes()) == serde.PlanExtraMetadata(
        {"_hoodie.spark.sql.writes.prepped": "true"}, [])


def test_plan_extra_metadata_of_plans_written_by_tms():
    extra = {"tms.schedule.scope": "incremental", "tms.schedule.full.pass": "20250101000000000"}
    ops = [CompactionOperation(base_instant_time="001", file_id=f"f{i}-0", partition_path=f"p{i}",
                               data_file_path=f"f{i}-0_0-1-1_001.parquet",
                               delta_file_paths=[f".f{i}-0_002.log.1_0-1-1"], metrics={"TOTAL_LOG_FILES": 1.0})
           for i in range(50)]
    compaction = serde.serialize_compaction_plan(CompactionPlan(
        operations=ops, extra_metadata=extra, strategy=CompactionStrategy(compactor_class_name="x"),
        missing_schedule_partitions=["p7", "p9"]))
    assert serde.read_plan_extra_metadata(compaction) == serde.PlanExtraMetadata(extra, ["p7", "p9"])
    assert serde.read_plan_extra_metadata(compaction) == _full_parse_scope(compaction)

    meta = _clustering_plan()
    meta.clustering_plan.extra_metadata = extra  # type: ignore[union-attr]
    meta.extra_metadata = {"outside": "the plan"}
    clustering = serde.serialize_requested_replace_metadata(meta)
    assert serde.read_plan_extra_metadata(clustering) == serde.PlanExtraMetadata(extra, [])
    # Hudi's incremental table services off: no missingSchedulePartitions, as the full parse reads it
    off = serde.serialize_compaction_plan(CompactionPlan(operations=ops, missing_schedule_partitions=None))
    assert serde.read_plan_extra_metadata(off) == serde.PlanExtraMetadata({}, None) == _full_parse_scope(off)


def test_plan_extra_metadata_refuses_what_is_not_a_plan():
    clean = serde.serialize_cleaner_plan(_cleaner_plan())
    with pytest.raises(MetadataFormatError, match="expected .*HoodieCompactionPlan or .*HoodieRequestedReplace"):
        serde.read_plan_extra_metadata(clean)
    with pytest.raises(MetadataFormatError, match="empty metadata file"):
        serde.read_plan_extra_metadata(b"")
    plan = serde.serialize_compaction_plan(CompactionPlan(extra_metadata={"a": "b"}))
    with pytest.raises(MetadataFormatError, match="corrupt Avro container"):
        serde.read_plan_extra_metadata(plan[: len(plan) - 20])


# --- clean --------------------------------------------------------------------------------------------------


def _cleaner_plan() -> CleanerPlan:
    return CleanerPlan(
        earliest_instant_to_retain=ActionInstant(timestamp="20250101000000000", action="commit", state="COMPLETED"),
        last_completed_commit_timestamp="20250102000000000",
        policy="KEEP_LATEST_COMMITS",
        file_paths_to_be_deleted_per_partition={
            "city=chennai": [CleanFileInfo(file_path="/t/city=chennai/f-0_0-1-1_001.parquet")]
        },
        partitions_to_be_deleted=["city=gone"],
    )


def test_cleaner_plan_round_trip():
    plan = _cleaner_plan()
    data = serde.serialize_cleaner_plan(plan)
    assert serde.parse_cleaner_plan(data) == plan

    name, [record] = _records(data)
    assert name == MODEL + "HoodieCleanerPlan"
    assert record["version"] == 2
    assert record["earliestInstantToRetain"] == {
        "timestamp": "20250101000000000",
        "action": "commit",
        "state": "COMPLETED",
    }
    assert record["filePathsToBeDeletedPerPartition"] == {
        "city=chennai": [{"filePath": "/t/city=chennai/f-0_0-1-1_001.parquet", "isBootstrapBaseFile": False}]
    }
    assert record["filesToBeDeletedPerPartition"] == {}
    assert record["extraMetadata"] == {}


def test_clean_metadata_round_trip():
    partition = CleanPartitionMetadata(
        partition_path="city=chennai",
        policy="KEEP_LATEST_COMMITS",
        delete_path_patterns=["f-0_0-1-1_001.parquet"],
        success_delete_files=["f-0_0-1-1_001.parquet"],
    )
    meta = CleanMetadata(
        start_clean_time="20250103000000000",
        time_taken_in_millis=42,
        total_files_deleted=1,
        earliest_commit_to_retain="20250101000000000",
        partition_metadata={"city=chennai": partition},
    )
    data = serde.serialize_clean_metadata(meta)
    assert serde.parse_clean_metadata(data) == meta

    name, [record] = _records(data)
    assert name == MODEL + "HoodieCleanMetadata"
    assert record["partitionMetadata"]["city=chennai"]["successDeleteFiles"] == ["f-0_0-1-1_001.parquet"]
    assert record["bootstrapPartitionMetadata"] == {} and record["lastCompletedCommitTimestamp"] == ""
    assert [f["name"] for f in _writer_schema(data)["fields"]] == [
        "startCleanTime",
        "timeTakenInMillis",
        "totalFilesDeleted",
        "earliestCommitToRetain",
        "lastCompletedCommitTimestamp",
        "partitionMetadata",
        "version",
        "bootstrapPartitionMetadata",
        "extraMetadata",
    ]


# --- rollback -----------------------------------------------------------------------------------------------


def test_v6_rollback_plan(tables):
    data = (tables / "v6_nonpartitioned_rollback/.hoodie/20250126040936578.rollback.requested").read_bytes()
    plan = serde.parse_rollback_plan(data)

    assert plan.version == 1
    assert plan.instant_to_rollback == serde.InstantInfo(commit_time="20250126040826878", action="deltacommit")
    delete, log_rollback = plan.rollback_requests
    assert delete.files_to_be_deleted == [
        "/opt/data/external_tables/v6_nonpartitioned_rollback/"
        "cd329d8f-0ce4-4654-84ab-2f769aae5034-0_1-33-44_20250126040826878.parquet"
    ]
    assert delete.partition_path == "" and delete.log_blocks_to_be_deleted == {}
    assert log_rollback.file_id == "0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0"
    assert log_rollback.latest_base_instant == "20250126040823628"
    assert log_rollback.log_blocks_to_be_deleted == {
        "file:/opt/data/external_tables/v6_nonpartitioned_rollback/"
        ".0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.1_0-33-43": 11828
    }

    out = serde.serialize_rollback_plan(plan)
    assert serde.parse_rollback_plan(out) == plan
    assert _records(out) == _records(data)
    assert _writer_schema(out) == _writer_schema(data)


def test_v6_rollback_metadata(tables):
    hoodie = tables / "v6_nonpartitioned_rollback/.hoodie"
    assert (hoodie / "20250126040936578.rollback.inflight").read_bytes() == b""
    data = (hoodie / "20250126040936578.rollback").read_bytes()
    meta = serde.parse_rollback_metadata(data)

    assert meta.start_rollback_time == "20250126040936578"
    assert (meta.time_taken_in_millis, meta.total_files_deleted) == (195, 1)
    assert meta.commits_rollback == ["20250126040826878"]
    assert meta.instants_rollback == [serde.InstantInfo(commit_time="20250126040826878", action="deltacommit")]
    partition = meta.partition_metadata[""]
    assert partition.success_delete_files == [
        "/opt/data/external_tables/v6_nonpartitioned_rollback/"
        "cd329d8f-0ce4-4654-84ab-2f769aae5034-0_1-33-44_20250126040826878.parquet"
    ]
    assert partition.failed_delete_files == []
    assert list(partition.rollback_log_files.values()) == [105]
    assert list(partition.log_files_from_failed_commit.values()) == [11828]

    out = serde.serialize_rollback_metadata(meta)
    assert serde.parse_rollback_metadata(out) == meta
    assert _records(out) == _records(data)
    assert _writer_schema(out) == _writer_schema(data)


# --- generic ------------------------------------------------------------------------------------------------


def test_parse_any_avro(tables):
    data = (tables / "v8_trips_8i3u1d/.hoodie/timeline/20251220210129235.compaction.requested").read_bytes()
    name, record = serde.parse_any_avro(data)
    assert name == MODEL + "HoodieCompactionPlan"
    assert len(record["operations"]) == 3
    name, record = serde.parse_any_avro(serde.serialize_cleaner_plan(_cleaner_plan()))
    assert name == MODEL + "HoodieCleanerPlan" and record["policy"] == "KEEP_LATEST_COMMITS"


# --- bad input ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "parse",
    [
        serde.parse_compaction_plan,
        serde.parse_requested_replace_metadata,
        serde.parse_cleaner_plan,
        serde.parse_clean_metadata,
        serde.parse_rollback_plan,
        serde.parse_rollback_metadata,
        serde.parse_any_avro,
    ],
)
@pytest.mark.parametrize("data", [b"", b"\x00\x01garbage", b"Obj\x01" + bytes(range(200)), b'{"a": 1}'])
def test_garbage_is_rejected(parse, data):
    with pytest.raises(MetadataFormatError):
        parse(data)


@pytest.mark.parametrize(
    "data",
    [
        b"\x00\x01garbage",
        b"{not json",
        b"[1, 2]",
        b'{"partitionToWriteStats": [1]}',
        b'{"partitionToWriteStats": {"p": [{"numWrites": 1, "runtimeStats": 3}]}}',
        b"Obj\x01" + bytes(range(200)),
        "{\u00e9".encode("latin-1"),
    ],
)
def test_bad_commit_metadata_is_rejected(data):
    with pytest.raises(MetadataFormatError):
        serde.parse_commit_metadata(data)


def test_truncated_avro_is_rejected(tables):
    for path, parse in [
        ("v6_nonpartitioned_rollback/.hoodie/20250126040936578.rollback.requested", serde.parse_rollback_plan),
        ("v8_nonpartitioned/.hoodie/timeline/20250713010535797_20250713010536200.commit", serde.parse_commit_metadata),
    ]:
        data = (tables / path).read_bytes()
        for end in range(1, len(data)):
            with pytest.raises(MetadataFormatError):
                parse(data[:end])


def test_wrong_record_is_rejected(tables):
    data = (tables / "v8_trips_8i3u1d/.hoodie/timeline/20251220210129235.compaction.requested").read_bytes()
    with pytest.raises(MetadataFormatError, match="expected org.apache.hudi.avro.model.HoodieRollbackPlan"):
        serde.parse_rollback_plan(data)
    with pytest.raises(MetadataFormatError, match="HoodieCompactionPlan"):
        serde.parse_commit_metadata(data)


def test_invalid_model_is_rejected():
    with pytest.raises(MetadataFormatError, match=r"cannot write .*HoodieCompactionPlan(.|\n)*baseInstantTime is <1>"):
        bad = CompactionOperation(base_instant_time=1, file_id="f")  # an int where Avro wants a string
        serde.serialize_compaction_plan(CompactionPlan(operations=[bad]))
    assert issubclass(MetadataFormatError, ValueError)


# --- property-based round trips -----------------------------------------------------------------------------

texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
optional_texts = st.none() | texts
ints = st.none() | st.integers(-(2**31), 2**31 - 1)
string_maps = st.dictionaries(texts, texts, max_size=3)

compaction_plans = st.builds(
    CompactionPlan,
    operations=st.lists(
        st.builds(
            CompactionOperation,
            base_instant_time=optional_texts,
            file_id=optional_texts,
            partition_path=optional_texts,
            data_file_path=optional_texts,
            delta_file_paths=st.lists(texts, max_size=3),
            metrics=st.dictionaries(texts, st.floats(allow_nan=False), max_size=3),
            bootstrap_file_path=optional_texts,
        ),
        max_size=4,
    ),
    extra_metadata=string_maps,
    version=ints,
    strategy=st.none()
    | st.builds(CompactionStrategy, compactor_class_name=optional_texts, strategy_params=string_maps, version=ints),
    preserve_hoodie_metadata=st.none() | st.booleans(),
    missing_schedule_partitions=st.none() | st.lists(texts, max_size=3),
)

cleaner_plans = st.builds(
    CleanerPlan,
    earliest_instant_to_retain=st.none() | st.builds(ActionInstant, timestamp=texts, action=texts, state=texts),
    last_completed_commit_timestamp=texts,
    policy=texts,
    files_to_be_deleted_per_partition=st.dictionaries(texts, st.lists(texts, max_size=3), max_size=3),
    version=ints,
    file_paths_to_be_deleted_per_partition=st.dictionaries(
        texts,
        st.lists(
            st.builds(CleanFileInfo, file_path=optional_texts, is_bootstrap_base_file=st.none() | st.booleans()),
            max_size=3,
        ),
        max_size=3,
    ),
    partitions_to_be_deleted=st.lists(texts, max_size=3),
    extra_metadata=string_maps,
)


@given(compaction_plans)
def test_compaction_plan_round_trip_property(plan):
    assert serde.parse_compaction_plan(serde.serialize_compaction_plan(plan)) == plan


@given(cleaner_plans)
def test_cleaner_plan_round_trip_property(plan):
    assert serde.parse_cleaner_plan(serde.serialize_cleaner_plan(plan)) == plan


# --- an independent reader ----------------------------------------------------------------------------------


def _rebuilt(meta: CommitMetadata) -> CommitMetadata:
    """The commit rebuilt from the fields a writer of this project fills in, every other field left to the
    model's defaults, so the bytes written differ from Java's."""
    keep = (
        "file_id path prev_commit partition_path num_writes num_deletes num_update_writes num_inserts "
        "total_write_bytes file_size_in_bytes base_file log_files log_version log_offset prev_base_file"
    ).split()
    return CommitMetadata(
        partition_to_write_stats={
            partition: [WriteStat(**{name: getattr(stat, name) for name in keep}) for stat in stats]
            for partition, stats in meta.partition_to_write_stats.items()
        },
        compacted=meta.compacted,
        extra_metadata=meta.extra_metadata,
        operation_type=meta.operation_type,
        partition_to_replace_file_ids=meta.partition_to_replace_file_ids,
    )


@pytest.mark.parametrize(
    "name", ["v6_trips_8i1u", "v6_simplekeygen_nonhivestyle_overwritetable", "v8_trips_8i3u1d", "v8_nonpartitioned"]
)
def test_hudi_rs_reads_rewritten_commits(tables, tmp_path, name):
    table = tmp_path / name
    shutil.copytree(tables / name, table)
    expected = _rows(table)
    assert expected

    version = _table_version(table)
    rewritten = 0
    for path in _timeline(table, state="completed"):
        if _instant(path.name)[0] not in ("commit", "deltacommit", "replacecommit"):
            continue
        data = path.read_bytes()
        out = serde.serialize_commit_metadata(_rebuilt(serde.parse_commit_metadata(data)), version)
        assert out != data
        path.write_bytes(out)
        rewritten += 1
    assert rewritten >= 2

    assert _rows(table) == expected
