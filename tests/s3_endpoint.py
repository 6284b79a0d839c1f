"""An S3 API on loopback for the tests: the `moto` server, in a process of its own, with a bucket.

Run as a script (`python tests/s3_endpoint.py PORT`) it is the server: moto's app, served by Werkzeug's
threaded server as `moto_server` serves it, with one difference: requests are handled one at a time. moto
checks `If-None-Match: *` and then stores the object in two steps, so two PUTs of one key handled at once
can both succeed (measured: 1 race of 200 with 8 writers); S3 itself decides a conditional create
atomically, and so does this endpoint.

Imported, `S3Endpoint.start()` starts that process on a free port and creates a bucket; `env()` is what a
client process needs to reach it (the AWS SDKs, s3fs and hudi-rs read these variables)."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopback_server import free_port, stop, wait_listening

ACCESS_KEY = "tms-test-key"
SECRET_KEY = "tms-test-secret"
REGION = "us-east-1"



@dataclass
class S3Endpoint:
    url: str
    bucket: str
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, log_path: Path, bucket: str = "tms-lake", timeout: float = 60.0) -> S3Endpoint:
        port = free_port()
        log = open(log_path, "wb")  # noqa: SIM115 (the process writes it until stopped)
        process = subprocess.Popen([sys.executable, __file__, str(port)], stdout=log, stderr=subprocess.STDOUT)
        endpoint = cls(f"http://127.0.0.1:{port}", bucket, process)
        wait_listening(process, port, "the moto server", log_path, timeout)
        endpoint.client().create_bucket(Bucket=bucket)
        return endpoint

    def env(self) -> dict[str, str]:
        """What a process needs to reach the endpoint: boto3/aiobotocore (s3fs) and object_store (hudi-rs,
        obstore) read these."""
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION, "AWS_ALLOW_HTTP": "true",
                "AWS_EC2_METADATA_DISABLED": "true"}

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key.strip('/')}"

    def client(self) -> Any:
        import boto3
        return boto3.client("s3", endpoint_url=self.url, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def key(self, uri: str) -> str:
        """The key of an `s3://bucket/...` URI in the bucket."""
        return uri.split(f"{self.bucket}/", 1)[1]

    def keys(self, prefix: str) -> list[str]:
        """Every key under `prefix` (in the bucket)."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))

    def stop(self) -> None:
        stop(self.process)


def _serve(port: int) -> None:
    import threading

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import run_simple

    app = DomainDispatcherApplication(create_backend_app)
    one_at_a_time = threading.Lock()

    def serialized(environ: dict[str, Any], start_response: Any) -> Any:
        with one_at_a_time:
            return list(app(environ, start_response))

    os.environ.setdefault("MOTO_PORT", str(port))
    run_simple("127.0.0.1", port, serialized, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
