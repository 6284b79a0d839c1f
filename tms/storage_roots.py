"""How each storage root is reached: the setting TMS_STORAGE_ROOT_OPTIONS gives a root of TMS_STORAGE_ROOTS its
endpoint, region, addressing, anonymous access, profile, account and credentials. Credentials are never in the
setting itself: it names the environment variable or the file that holds each one, read when a store is opened
(so a rotated file is picked up), and so they are never in the database, in the API or on a command line.

Every role passes the format library each root's options (`RootStorageOptions`, in the context
`tms.table_context` builds from its settings); the setting travels to the processes TMS starts in the
environment (`ROOT_OPTIONS_ENV`, `tms.table_context.child_env`), and the worker hands its Spark jobs the Hadoop
configuration of each root (`hadoop_conf`: `fs.s3a.bucket.<bucket>.*`), the credentials set by the job's
driver in its own SparkConf (`hadoop_secrets`), never passed to spark-submit."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tms.errors import ConfigError

ROOT_OPTIONS_ENV = "TMS_STORAGE_ROOT_OPTIONS"
S3_SCHEMES = ("s3", "s3a")
AZURE_SCHEMES = ("abfs", "abfss", "az")


class StorageRootOptions(BaseModel):
    """How one storage root is reached; every field optional (unset: the store client's own default, which reads
    the store's usual environment variables and configuration files)."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    endpoint: str | None = Field(None, description="The endpoint URL. S3: an S3-compatible store, a private "
                                                   "endpoint; Azure: the account's blob endpoint (Azurite, a "
                                                   "private endpoint), with `account`")
    region: str | None = Field(None, description="S3: the bucket's region")
    path_style: bool = Field(False, description="S3: path-style requests (`endpoint/bucket/key`) instead of "
                                                "virtual-hosted ones")
    anonymous: bool = Field(False, description="No credentials at all (a public bucket or container)")
    profile: str | None = Field(None, description="S3: a profile of the AWS configuration files")
    account: str | None = Field(None, description="Azure: the storage account's name")
    key_id_env: str | None = Field(None, description="S3: the environment variable holding the access key id")
    key_id_file: Path | None = Field(None, description="S3: a file holding the access key id")
    secret_env: str | None = Field(None, description="The environment variable holding the secret (S3: the secret "
                                                     "access key; Azure: the account key)")
    secret_file: Path | None = Field(None, description="A file holding the secret (as `secret_env`)")

    @model_validator(mode="after")
    def _one_source_each(self) -> StorageRootOptions:
        for what in ("key_id", "secret"):
            if getattr(self, f"{what}_env") and getattr(self, f"{what}_file"):
                raise ValueError(f"{what}_env and {what}_file both given: name one place for the {what}")
        if self.anonymous and (self.secret_env or self.secret_file or self.key_id_env or self.key_id_file):
            raise ValueError("anonymous with credentials: drop one")
        return self

    def key_id(self) -> str | None:
        return _read_secret(self.key_id_env, self.key_id_file, "key id")

    def secret(self) -> str | None:
        return _read_secret(self.secret_env, self.secret_file, "secret")


def _read_secret(env: str | None, file: Path | None, what: str) -> str | None:
    if env:
        value = os.environ.get(env)
        if not value:
            raise ConfigError(f"{ROOT_OPTIONS_ENV}: the {what} is to be in the environment variable {env}, "
                              "which is not set")
        return value
    if file:
        try:
            return file.read_text().strip()
        except OSError as e:
            raise ConfigError(f"{ROOT_OPTIONS_ENV}: the {what} file {file} cannot be read: {e.strerror}") from None
    return None


def check_roots(options: dict[str, StorageRootOptions], storage_roots: list[str]) -> None:
    """Each root given options is one of TMS_STORAGE_ROOTS, of a store the options apply to."""
    for root in options:
        if root.rstrip("/") not in {r.rstrip("/") for r in storage_roots}:
            raise ConfigError(f"{ROOT_OPTIONS_ENV}: {root} is not one of TMS_STORAGE_ROOTS")
        if urlsplit(root).scheme not in (*S3_SCHEMES, *AZURE_SCHEMES):
            raise ConfigError(f"{ROOT_OPTIONS_ENV}: {root}: options are for s3://, s3a://, abfs://, abfss:// and "
                              "az:// roots")


def _under(base_path: str, root: str) -> bool:
    root = root.rstrip("/")
    return base_path == root or base_path.startswith(root + "/")


def root_of(base_path: str, options: dict[str, StorageRootOptions]) -> str | None:
    """The longest root with options that `base_path` lies under."""
    roots = [r for r in options if _under(base_path.rstrip("/"), r)]
    return max(roots, key=len) if roots else None


def fsspec_options(root: str, options: StorageRootOptions) -> dict[str, Any]:
    """The fsspec (s3fs, adlfs) options of a root, its credentials read now."""
    scheme = urlsplit(root).scheme
    out: dict[str, Any] = {}
    if scheme in S3_SCHEMES:
        client: dict[str, Any] = {}
        if options.endpoint:
            out["endpoint_url"] = options.endpoint
        if options.region:
            client["region_name"] = options.region
        if options.path_style:
            out["config_kwargs"] = {"s3": {"addressing_style": "path"}}
        if options.anonymous:
            out["anon"] = True
        if options.profile:
            out["profile"] = options.profile
        key_id, secret = options.key_id(), options.secret()
        if key_id:
            out["key"] = key_id
        if secret:
            out["secret"] = secret
        if client:
            out["client_kwargs"] = client
    else:  # Azure (adlfs)
        if options.account:
            out["account_name"] = options.account
        if options.anonymous:
            out["anon"] = True
        secret = options.secret()
        if options.endpoint:
            # adlfs takes another endpoint only in a connection string (its account_host is https only)
            out["connection_string"] = _azure_connection_string(options.endpoint, options.account, secret)
        elif secret:
            out["account_key"] = secret
    return out


def _azure_connection_string(endpoint: str, account: str | None, secret: str | None) -> str:
    parts = {"DefaultEndpointsProtocol": urlsplit(endpoint).scheme or "https", "AccountName": account,
             "AccountKey": secret, "BlobEndpoint": endpoint}
    return "".join(f"{k}={v};" for k, v in parts.items() if v)


def hadoop_conf(options: dict[str, StorageRootOptions]) -> dict[str, str]:
    """The Spark confs (`spark.hadoop.*`) that reach each root through Hadoop's S3A and ABFS connectors, per
    bucket or account, without credentials (`hadoop_secrets`)."""
    conf: dict[str, str] = {}
    for root, o in options.items():
        scheme, bucket = urlsplit(root).scheme, urlsplit(root).netloc
        if scheme in S3_SCHEMES:
            prefix = f"spark.hadoop.fs.s3a.bucket.{bucket}."
            if o.endpoint:
                conf[prefix + "endpoint"] = o.endpoint
            if o.region:
                conf[prefix + "endpoint.region"] = o.region
            if o.path_style:
                conf[prefix + "path.style.access"] = "true"
            if o.anonymous:
                conf[prefix + "aws.credentials.provider"] = \
                    "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
    return conf


def hadoop_secrets(options: dict[str, StorageRootOptions]) -> dict[str, str]:
    """The credentials of each root as Spark confs, for a job's driver to set in its own SparkConf (never on a
    command line; Spark's UI redacts them, by its `spark.redaction.regex`): for Hadoop's connectors, and the
    variables that hold them for the Python executors (on a cluster they do not inherit the driver's
    environment; a credential file must be on every executor's machine)."""
    conf: dict[str, str] = {}
    for root, o in options.items():
        for env in (o.key_id_env, o.secret_env):
            if env and os.environ.get(env):
                conf[f"spark.executorEnv.{env}"] = os.environ[env]
        scheme, bucket = urlsplit(root).scheme, urlsplit(root).netloc
        secret = o.secret()
        if scheme in S3_SCHEMES:
            key_id = o.key_id()
            if key_id and secret:
                conf[f"spark.hadoop.fs.s3a.bucket.{bucket}.access.key"] = key_id
                conf[f"spark.hadoop.fs.s3a.bucket.{bucket}.secret.key"] = secret
        elif o.account and secret:
            for host in ("dfs", "blob"):
                conf[f"spark.hadoop.fs.azure.account.key.{o.account}.{host}.core.windows.net"] = secret
    return conf


def dump_root_options(options: dict[str, StorageRootOptions]) -> str:
    """The setting as the environment carries it (names of variables and files only: no credential)."""
    return json.dumps({root: o.model_dump(mode="json", exclude_defaults=True) for root, o in options.items()},
                      sort_keys=True)


@dataclass(frozen=True)
class RootStorageOptions:
    """The fsspec options of the root a path lies under (None when its root has none), credentials read when a
    store is opened: what TMS passes the format library as `HudiContext.storage_options`. Pickles with the
    names of credential variables and files only, for tasks that open storage on Spark executors."""
    options: dict[str, StorageRootOptions]

    def __call__(self, base_path: str) -> dict[str, Any] | None:
        root = root_of(base_path, self.options)
        return fsspec_options(root, self.options[root]) if root else None
