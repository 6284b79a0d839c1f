"""The Java harness's driver: one warm Spark 3.5 session with a Hudi Spark bundle on its classpath, writing and
reading tables through Hudi's own datasource on command. Runs in the harness's PySpark 3.5 venv (not the
product's); the tests talk to it through harness.py.

Protocol: one JSON command per line on stdin, one JSON answer per line on stdout, prefixed with ANSWER (Spark
may print to stdout too). Commands:
  {"op": "write", "path", "name", "table_type", "operation", "rows": [...], "options": {...},
   "boolean_columns": [...] (optional: boolean columns the rows have beyond SCHEMA, e.g. _hoodie_is_deleted),
   "string_columns": [...], "long_columns": [...] (optional: text and long columns beyond SCHEMA, e.g. AWS DMS's
   Op, Debezium's _event_lsn)}
      -> {"instant": the instant the write completed, "completion": its completion time (Hudi 1.x; else the instant)}
  {"op": "crash_write", same as write, "failing_id"}: a write whose Spark tasks fail at the row of that id,
      after Hudi started its instant -> {"failure": the exception}, as a writer that crashed leaves it behind
  {"op": "read", "path", "query_type": "snapshot" | "read_optimized", "options": {...},
   "extra_columns": [...] (optional: columns beyond SCHEMA to read)} -> {"rows": [...]}
  {"op": "sql", "statement"} -> {"rows": [...]}
  {"op": "hadoop_conf", "conf": {...}}: sets the session's Hadoop configuration (e.g. fs.s3a.*) -> {}
  {"op": "soak", "path", "name", "table_type", "writers": [{"keys": [ids], "part", "options", "inserts"}],
   "seconds", "min_acks", "max_seconds"}: one thread per writer, each writing its own keys (in its partition)
      over and over (upserts of a third of its keys, every fourth write a delete of two; each write's ts is
      newer; with "inserts": true, two new keys per write instead) for `seconds`, then until it has `min_acks`
      acknowledged writes, at most `max_seconds` in all
      -> {"writers": [{"acks": [{"op", "rows"}...] in commit order, "conflicts": [...], "rejected": [...],
          "raced": [...], "errors": [...]}]}: a write Hudi refused for a write conflict (optimistic concurrency
          control), because it updates a file group being clustered, or because a clustering plan it was reading
          was rolled back (PLAN_GONE) is not acknowledged, nor is one that failed otherwise
  {"op": "quit"}
Any failure answers {"error": "<the Java or Python exception>"}; the driver goes on.

    python driver.py HUDI_BUNDLE_JAR[,OTHER_JAR...] [DRIVER_MEMORY]"""
from __future__ import annotations

import json
import re
import sys
import time
import traceback

from pyspark.sql import SparkSession
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

ANSWER = "ANSWER "
SCHEMA = StructType([
    StructField("id", StringType(), False),
    StructField("part", StringType(), False),
    StructField("ts", LongType(), False),
    StructField("name", StringType(), True),
    StructField("value", LongType(), True),
])
COLUMNS = [f.name for f in SCHEMA.fields]


def start(jars: str, memory: str = "1g") -> SparkSession:
    return (SparkSession.builder.master("local[2]").appName("tms-hudi-java-harness")
            .config("spark.jars", jars)
            .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
            .config("spark.kryo.registrator", "org.apache.spark.HoodieSparkKryoRegistrar")
            .config("spark.sql.extensions", "org.apache.spark.sql.hudi.HoodieSparkSessionExtension")
            .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.hudi.catalog.HoodieCatalog")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.default.parallelism", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", memory)
            .getOrCreate())


def write(spark: SparkSession, command: dict) -> dict:
    _save(_frame(spark, command), command)
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    # The instant this write completed: the last completed commit of the write timeline.
    meta = (jvm.org.apache.hudi.common.table.HoodieTableMetaClient.builder()
            .setConf(_storage_conf(spark)).setBasePath(command["path"]).build())
    last = meta.getActiveTimeline().getWriteTimeline().filterCompletedInstants().lastInstant().get()
    return {"instant": _instant_time(last), "completion": _completion_time(last)}


def crash_write(spark: SparkSession, command: dict) -> dict:
    from pyspark.sql import functions as F

    frame = _frame(spark, command)
    # Evaluated lazily, in the tasks of Hudi's write: the instant is already on the timeline, its heartbeat on.
    crash = F.raise_error(F.lit("the harness crashes this write")).cast("long")
    frame = frame.withColumn("value", F.when(F.col("id") == command["failing_id"], crash).otherwise(F.col("value")))
    try:
        _save(frame, command)
    except Exception as exc:  # noqa: BLE001 (the crash is the point)
        return {"failure": f"{type(exc).__name__}: {exc}"[:2000], "crashed_here": "the harness crashes" in str(exc)}
    raise RuntimeError("the write meant to crash completed")


# How a refused write names its refusal (the Java exception in Py4J's message)
WRITE_CONFLICT = "HoodieWriteConflictException"
CLUSTERING_REJECTED = "HoodieClusteringUpdateException"
# A writer lists the pending clustering plans, then reads each: a plan rolled back in between (the writer that won
# over it drops it, as Hudi's own writers do with hoodie.clustering.rollback.pending.replacecommit.on.conflict)
# fails the write. Hudi's timeline reads are not atomic with a table service's rollback; nothing was written.
PLAN_GONE = re.compile(r"FileNotFoundException: File \S+/\.hoodie/timeline/\d+\.(clustering|replacecommit)"
                       r"\.requested does not exist")


def soak(spark: SparkSession, command: dict) -> dict:
    import random
    import threading

    began = time.monotonic()
    outcomes = [{"acks": [], "conflicts": [], "rejected": [], "raced": [], "errors": []} for _ in command["writers"]]

    def run(index: int, spec: dict) -> None:
        rng, keys, outcome = random.Random(index), spec["keys"], outcomes[index]
        write = 0
        while True:
            elapsed = time.monotonic() - began
            if elapsed >= command["max_seconds"] or (
                    elapsed >= command["seconds"] and len(outcome["acks"]) >= command["min_acks"]):
                return
            write += 1
            ts = int(time.time() * 1000)  # newer than every earlier write of this key
            if spec.get("inserts"):
                operation, chosen = "insert", [f"{keys[0]}-new{write:03d}-{j}" for j in range(2)]
            else:
                operation = "delete" if write % 4 == 0 else "upsert"
                chosen = rng.sample(keys, 2 if operation == "delete" else max(1, len(keys) // 3))
            rows = [{"id": k, "part": spec["part"], "ts": ts, "name": f"w{index}-{write}", "value": write}
                    for k in sorted(chosen)]
            # The tag goes into the commit's extra metadata (Hudi's `_` option prefix): which instant made each write
            tag = f"w{index}-{write}"
            try:
                _save(_frame(spark, {"rows": rows}), {**command, "operation": operation,
                                                      "options": {**spec["options"], "_tms_soak_write": tag}})
            except Exception as exc:  # noqa: BLE001 (each failure is sorted for the test to judge)
                text = f"{type(exc).__name__}: {exc}"
                kind = ("conflicts" if WRITE_CONFLICT in text else "rejected" if CLUSTERING_REJECTED in text
                        else "raced" if PLAN_GONE.search(text) else "errors")
                # The first line and the Java causes (a stack trace's other lines say little)
                lines = text.splitlines()
                outcome[kind].append("\n".join([lines[0][:500]] + [c[:500] for c in lines if "Caused by" in c]))
                continue
            outcome["acks"].append({"op": operation, "rows": rows, "tag": tag})

    threads = [threading.Thread(target=run, args=(i, spec), daemon=True) for i, spec in enumerate(command["writers"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"writers": outcomes}


def _frame(spark: SparkSession, command: dict):
    extra = [(c, t) for key, t in (("boolean_columns", BooleanType()), ("string_columns", StringType()),
                                   ("long_columns", LongType())) for c in command.get(key, [])]
    schema = StructType([*SCHEMA.fields, *(StructField(c, t, True) for c, t in extra)])
    rows = [tuple(r.get(c) for c in [*COLUMNS, *(c for c, _ in extra)]) for r in command["rows"]]
    return spark.createDataFrame(rows, schema).coalesce(1)


def _save(frame, command: dict) -> None:
    options = {
        "hoodie.table.name": command["name"],
        "hoodie.datasource.write.table.type": command["table_type"],
        "hoodie.datasource.write.operation": command["operation"],
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.datasource.write.precombine.field": "ts",
        **command.get("options", {}),
    }
    frame.write.format("hudi").options(**options).mode("append").save(command["path"])


def _storage_conf(spark: SparkSession):
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]
    try:  # Hudi 1.x: a StorageConfiguration
        return jvm.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(hadoop)
    except Exception:  # noqa: BLE001 (Hudi 0.15 builds its meta client from Hadoop's Configuration)
        return hadoop


def _instant_time(instant) -> str:
    for getter in ("requestedTime", "getTimestamp"):  # Hudi 1.x, 0.15
        try:
            return str(getattr(instant, getter)())
        except Exception:  # noqa: BLE001, S112
            continue
    raise RuntimeError(f"cannot read the time of {instant}")


def _completion_time(instant) -> str:
    try:  # Hudi 1.x: incremental queries range over completion times
        return str(instant.getCompletionTime())
    except Exception:  # noqa: BLE001 (Hudi 0.15: an instant has only its time)
        return _instant_time(instant)


def read(spark: SparkSession, command: dict) -> dict:
    options = {"hoodie.datasource.query.type": command.get("query_type", "snapshot"), **command.get("options", {})}
    frame = spark.read.format("hudi").options(**options).load(command["path"])
    columns = [*COLUMNS, *command.get("extra_columns", [])]
    return {"rows": [r.asDict() for r in frame.select(*columns).collect()]}


def sql(spark: SparkSession, command: dict) -> dict:
    return {"rows": [{k: _plain(v) for k, v in r.asDict().items()} for r in spark.sql(command["statement"]).collect()]}


def hadoop_conf(spark: SparkSession, command: dict) -> dict:
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]
    for key, value in command["conf"].items():
        hadoop.set(key, value)
    return {}


def _plain(value):
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


def main() -> int:
    started = time.monotonic()
    spark = start(*sys.argv[1:3])
    version = spark.sparkContext._jvm.org.apache.hudi.common.table.HoodieTableVersion.current()  # type: ignore
    print(ANSWER + json.dumps({"ready": True, "seconds": time.monotonic() - started, "spark": spark.version,
                               "table_version": version.versionCode()}), flush=True)
    handlers = {"write": write, "crash_write": crash_write, "read": read, "sql": sql, "hadoop_conf": hadoop_conf,
                "soak": soak}
    for line in sys.stdin:
        command = json.loads(line)
        if command["op"] == "quit":
            break
        began = time.monotonic()
        try:
            answer = handlers[command["op"]](spark, command)
        except Exception as exc:  # noqa: BLE001 (every failure is the test's to judge)
            answer = {"error": f"{type(exc).__name__}: {exc}"[:4000], "trace": traceback.format_exc()[-4000:]}
        answer["seconds"] = time.monotonic() - began
        print(ANSWER + json.dumps(answer, default=str), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
