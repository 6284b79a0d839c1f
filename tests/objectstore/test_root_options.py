"""Options per storage root (TMS_STORAGE_ROOT_OPTIONS): a root's endpoint, region, addressing and credentials
(named by environment variable or file, never given in the setting) reach every `open_storage` of a process and
of the processes TMS starts, and the Spark jobs' Hadoop configuration, with no credential on a command line."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support import REPO

from tms.config import load_settings
from tms.errors import ConfigError
from tms.execute.spark_submit import executor_settings_conf, spark_submit_command
from tms.storage_roots import (
    ROOT_OPTIONS_ENV,
    RootStorageOptions,
    StorageRootOptions,
    fsspec_options,
    hadoop_secrets,
)
from tms.table_context import table_context

DEAD_ENDPOINT = "http://127.0.0.1:9"  # loopback's discard port: nothing answers there


def _clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without the test endpoints' variables: a process reaches a store only by
    what its root's options say (the default endpoint is a dead one on loopback, never the internet)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AZURE", "TMS_"))}
    return {**env, "AWS_ENDPOINT_URL": DEAD_ENDPOINT, "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_MAX_ATTEMPTS": "1", **extra}


def _tms(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tms.cli", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.slow  # ~30 s: three `tms` processes, one of which retries a dead endpoint until it gives up
def test_a_process_reaches_its_root_by_the_roots_options_and_credentials_from_env_and_file(
        s3_endpoint, s3_base, tmp_path):
    from s3_endpoint import ACCESS_KEY, REGION, SECRET_KEY
    secret_file = tmp_path / "lake.secret"
    secret_file.write_text(SECRET_KEY + "\n")
    root = f"s3://{s3_endpoint.bucket}"
    options = {root: {"endpoint": s3_endpoint.url, "region": REGION, "path_style": True,
                      "key_id_env": "LAKE_KEY_ID", "secret_file": str(secret_file)}}
    env = _clean_env(TMS_STORAGE_ROOTS=root, TMS_STORAGE_ROOT_OPTIONS=json.dumps(options), LAKE_KEY_ID=ACCESS_KEY)
    table = f"{s3_base}/t"
    records = tmp_path / "rows.jsonl"
    records.write_text("".join(json.dumps({"id": i, "ts": 1, "city": "sf"}) + "\n" for i in range(5)))

    written = _tms(env, "write", table, "--create", "--records", str(records), "--key", "id", "--ordering", "ts",
                   "--partition", "city")
    assert written.returncode == 0, written.stderr
    verified = _tms(env, "verify", table)
    assert verified.returncode == 0 and "ok: no differences" in verified.stdout, verified.stdout + verified.stderr
    assert any(k.endswith("hoodie.properties") for k in s3_endpoint.keys(s3_endpoint.key(table))), \
        "the table is on the endpoint the options named"

    without = _tms({k: v for k, v in env.items() if k != "TMS_STORAGE_ROOT_OPTIONS"}, "verify", table)
    assert without.returncode != 0, "without the root's options the process has only the dead default endpoint"
    assert without.stderr.strip().splitlines()[-1].startswith(f"error: cannot reach the store of {table}"), \
        without.stderr  # one line, the store and the reason


def _options_of(monkeypatch, roots: dict) -> RootStorageOptions:
    """The storage options TMS passes the format library (its context) under TMS_STORAGE_ROOT_OPTIONS=`roots`."""
    monkeypatch.setenv("TMS_STORAGE_ROOTS", ",".join(roots))
    monkeypatch.setenv(ROOT_OPTIONS_ENV, json.dumps(roots))
    options = table_context(load_settings()).storage_options
    assert isinstance(options, RootStorageOptions)
    return options


def test_a_credential_named_but_missing_is_one_line_naming_the_variable(monkeypatch):
    storage_options_of = _options_of(monkeypatch, {"s3://lake": {"secret_env": "LAKE_SECRET_UNSET"}})
    monkeypatch.delenv("LAKE_SECRET_UNSET", raising=False)
    with pytest.raises(ConfigError, match="LAKE_SECRET_UNSET, which is not set"):
        storage_options_of("s3://lake/t")
    assert storage_options_of("s3://other/t") is None, "a root without options: the client's defaults"


def test_the_longest_root_wins_and_options_map_to_s3fs_and_adlfs(monkeypatch):
    monkeypatch.setenv("LAKE_SECRET", "s3cr3t")
    monkeypatch.setenv("AZ_KEY", "azk3y")
    storage_options_of = _options_of(monkeypatch, {
        "s3://lake": {"region": "eu-west-1"},
        "s3://lake/private": {"endpoint": "http://127.0.0.1:1", "path_style": True, "profile": "p",
                              "key_id_env": "LAKE_SECRET", "secret_env": "LAKE_SECRET"},
        "az://container": {"account": "acct", "secret_env": "AZ_KEY"},
        "az://emulated": {"account": "acct", "endpoint": "http://127.0.0.1:1/acct", "secret_env": "AZ_KEY"}})
    assert storage_options_of("s3://lake/public/t") == {"client_kwargs": {"region_name": "eu-west-1"}}
    assert storage_options_of("s3://lake/private/t") == {
        "endpoint_url": "http://127.0.0.1:1", "config_kwargs": {"s3": {"addressing_style": "path"}},
        "profile": "p", "key": "s3cr3t", "secret": "s3cr3t"}
    assert storage_options_of("s3://lakehouse/t") is None, "a prefix of the name is not a root"
    assert storage_options_of("az://container/t") == {"account_name": "acct", "account_key": "azk3y"}
    assert storage_options_of("az://emulated/t") == {"account_name": "acct", "connection_string":
        "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=azk3y;BlobEndpoint=http://127.0.0.1:1/acct;"}
    assert fsspec_options("s3://b", StorageRootOptions(anonymous=True)) == {"anon": True}


def test_settings_refuse_options_for_a_root_that_is_not_a_storage_root(monkeypatch):
    monkeypatch.setenv("TMS_STORAGE_ROOTS", "s3://lake")
    monkeypatch.setenv("TMS_STORAGE_ROOT_OPTIONS", json.dumps({"s3://other": {"region": "eu-west-1"}}))
    with pytest.raises(ConfigError, match="s3://other is not one of TMS_STORAGE_ROOTS"):
        load_settings()
    monkeypatch.setenv("TMS_STORAGE_ROOT_OPTIONS", json.dumps({"s3://lake": {"secret": "in plain text"}}))
    with pytest.raises(ConfigError, match="TMS_STORAGE_ROOT_OPTIONS"):  # credentials only by variable or file
        load_settings()


def test_spark_jobs_get_each_roots_hadoop_conf_and_the_credentials_never_on_the_command_line(
        monkeypatch, tmp_path):
    monkeypatch.setenv("LAKE_KEY_ID", "AKIDLAKE")
    monkeypatch.setenv("LAKE_SECRET", "s3cr3t-value")
    monkeypatch.setenv("TMS_STORAGE_ROOTS", "s3://lake/warehouse,az://data")
    monkeypatch.setenv("TMS_STORAGE_ROOT_OPTIONS", json.dumps({
        "s3://lake/warehouse": {"endpoint": "http://127.0.0.1:1", "region": "eu-west-1", "path_style": True,
                                "key_id_env": "LAKE_KEY_ID", "secret_env": "LAKE_SECRET"},
        "az://data": {"account": "acct", "secret_env": "LAKE_SECRET"}}))
    settings = load_settings()
    command = spark_submit_command("s3://lake/warehouse/t", "20250101000000000", py_files=tmp_path / "tms-jobs.zip",
                                   master="spark://h:7077", spark_submit="spark-submit",
                                   settings_conf=executor_settings_conf(settings))
    confs = dict(c.split("=", 1) for c in command[command.index("--conf") + 1::2] if "=" in c
                 and c.startswith("spark."))
    assert {k: v for k, v in confs.items() if "fs.s3a" in k} == {
        "spark.hadoop.fs.s3a.bucket.lake.endpoint": "http://127.0.0.1:1",
        "spark.hadoop.fs.s3a.bucket.lake.endpoint.region": "eu-west-1",
        "spark.hadoop.fs.s3a.bucket.lake.path.style.access": "true"}
    assert json.loads(confs[f"spark.executorEnv.{ROOT_OPTIONS_ENV}"])["az://data"] == {
        "account": "acct", "secret_env": "LAKE_SECRET"}
    assert not [a for a in command if "s3cr3t-value" in a or "AKIDLAKE" in a], "no credential on the command line"

    from jobs.spark_runner import driver_conf
    conf = dict(driver_conf("a job", settings).getAll())
    assert conf["spark.hadoop.fs.s3a.bucket.lake.access.key"] == "AKIDLAKE"
    assert conf["spark.hadoop.fs.s3a.bucket.lake.secret.key"] == "s3cr3t-value"
    assert conf["spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net"] == "s3cr3t-value"
    assert conf["spark.executorEnv.LAKE_SECRET"] == "s3cr3t-value", "the executors' Python reaches the store too"
    assert hadoop_secrets({}) == {}
