"""The Spark runner on each object store (S3 on the moto server, Azure Blob storage on Azurite), on a standalone
cluster: `tms execute` compacts a table in a job of its own (spark-submit), then a queue's warm engine cleans it.

The jobs' drivers reach the stores only by TMS_STORAGE_ROOT_OPTIONS, with credentials named by an environment
variable and a file: the endpoints' own variables are not in their environment and the default S3 endpoint is a
dead one on loopback. The cluster's worker is started without the options and the credentials, and its
executors are its processes, not children of the job's driver: they reach a store only as the job hands them
its root's options (the worker of a cluster elsewhere has neither).
Afterwards TMS's reader and hudi-rs read exactly the model's rows, the cleaned objects are gone and
`tms verify` finds nothing."""
from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from execute_support import ModelledTable, plan_clean_of_old_versions, plan_compaction, write_history
from spark_cluster import standalone_cluster
from typer.testing import CliRunner

from tms.cli import app
from tms.config import load_settings
from tms.execute.spark_submit import build_py_files, executor_settings_conf
from tms.storage_roots import ROOT_OPTIONS_ENV
from tms.table_context import table_context
from worker.warm_engine import EngineSpec, WarmEngine

DEAD_ENDPOINT = "http://127.0.0.1:9"  # loopback's discard port: nothing answers there
ON_THE_CLUSTER = {"spark.pyspark.python": sys.executable, "spark.executor.memory": "1g", "spark.ui.enabled": "false"}


def _tms(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def no_store_env(s3_endpoint, azure_endpoint) -> Iterator[None]:
    """This process's environment (and so the cluster's and the jobs') without the endpoints' variables."""
    with pytest.MonkeyPatch.context() as mp:
        for name in {*s3_endpoint.env(), *azure_endpoint.env()}:
            mp.delenv(name, raising=False)
        mp.setenv("AWS_ENDPOINT_URL", DEAD_ENDPOINT)
        mp.setenv("AWS_EC2_METADATA_DISABLED", "true")
        yield


@pytest.fixture(scope="module")
def cluster(no_store_env, tmp_path_factory) -> Iterator[str]:
    """A standalone cluster started before the roots' options are set: its worker, and so the executors it
    starts, have neither them nor the credentials, as on a real cluster."""
    with standalone_cluster(tmp_path_factory.mktemp("spark-work")) as url:
        yield url


@pytest.fixture(scope="module")
def roots_only(cluster, s3_endpoint, azure_endpoint, tmp_path_factory) -> Iterator[str]:
    """Each store's root, its options and the credentials they name, in this process (and so the jobs'
    drivers'); yields the cluster's master."""
    from azure_endpoint import ACCOUNT, ACCOUNT_KEY
    from s3_endpoint import ACCESS_KEY, REGION, SECRET_KEY

    secret_file = tmp_path_factory.mktemp("secrets") / "lake.secret"
    secret_file.write_text(SECRET_KEY + "\n")
    s3_root, azure_root = f"s3://{s3_endpoint.bucket}", f"az://{azure_endpoint.container}"
    options = {s3_root: {"endpoint": s3_endpoint.url, "region": REGION, "path_style": True,
                         "key_id_env": "LAKE_KEY_ID", "secret_file": str(secret_file)},
               azure_root: {"endpoint": azure_endpoint.url, "account": ACCOUNT, "secret_env": "LAKE_ACCOUNT_KEY"}}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMS_STORAGE_ROOTS", f"{s3_root},{azure_root}")
        mp.setenv(ROOT_OPTIONS_ENV, json.dumps(options))
        mp.setenv("LAKE_KEY_ID", ACCESS_KEY)
        mp.setenv("LAKE_ACCOUNT_KEY", ACCOUNT_KEY)
        yield cluster


@pytest.fixture(scope="module")
def warm_engine(roots_only, tmp_path_factory) -> Iterator[WarmEngine]:
    """A queue's warm engine on the cluster: one executor of one core."""
    work = tmp_path_factory.mktemp("warm")
    spec = EngineSpec(queue="stores", kind="standalone", master=roots_only,
                      spark_conf=tuple(sorted({**ON_THE_CLUSTER, "spark.executor.memory": "1024m"}.items())),
                      executors=1, executor_memory_mb=1024, executor_cores=1, driver_memory_mb=512, driver_cores=1)
    engine = WarmEngine(spec, py_files=build_py_files(work), run_dir=work / "run", log_dir=work / "logs",
                        settings_conf=executor_settings_conf(load_settings()))
    try:
        assert engine.wait_ready(240), f"the warm engine did not start: see {work / 'logs'}"
        yield engine
    finally:
        engine.stop()


@contextmanager
def _endpoint_env(endpoint) -> Iterator[None]:
    """hudi-rs, the check's second reader, knows no TMS options: it reads the endpoint's own variables."""
    with pytest.MonkeyPatch.context() as mp:
        for name, value in endpoint.env().items():
            mp.setenv(name, value)
        yield


@pytest.mark.slow  # ~90 s a store on 2 busy cores, and ~100 s for the cluster and the engine to start
@pytest.mark.waiting
def test_a_spark_job_compacts_and_a_warm_engine_cleans_a_table_on_an_object_store(
        store_base, store_endpoint, roots_only, warm_engine, tmp_path):
    t = ModelledTable(f"{store_base}/t", "MERGE_ON_READ", 8, context=table_context(load_settings()))
    write_history(t)

    compaction = plan_compaction(t.table())
    confs = [arg for key, value in ON_THE_CLUSTER.items() for arg in ("--conf", f"{key}={value}")]
    _tms("execute", t.path, "--instant", compaction, "--master", roots_only, *confs)  # a job of its own
    assert t.table().timeline.get(compaction).is_completed

    clean, doomed = plan_clean_of_old_versions(t.table())
    assert doomed, "the compaction left old file slices"
    log = tmp_path / "clean.log"
    plan = warm_engine.run(f"clean-{clean}", ["--table", t.path, "--instant", clean, "--action", "clean"], log)
    assert plan.wait(300) == 0, log.read_text()
    assert f"{warm_engine.app_id} (warm engine, job group" in log.read_text(), "the clean ran on the engine"
    assert t.table().timeline.get(clean).is_completed

    prefix = store_endpoint.key(t.path)
    keys = set(store_endpoint.keys(prefix))
    assert keys and not {f"{prefix}/{rel}" for rel in doomed} & keys, "the cleaned files are gone"
    assert "ok: no differences" in _tms("verify", t.path)
    with _endpoint_env(store_endpoint):
        t.check()
