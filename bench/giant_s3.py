"""The S3 test endpoint of bench/giant_table.py's `--s3`: moto's S3 app in a process of its own, each request
counted and handled one at a time (as tests/s3_endpoint.py serves it), with two routes of the bench's beside S3's:

- `POST /_bench/seed?dir=DIR&key=KEY`: every file under the local folder DIR put into the bucket under KEY by the
  server itself (no request per file), after removing what KEY held. An empty sparse file (a placeholder: a size,
  no bytes on disk) is stored empty with its size, so a listing reports the size planning reads and the server
  holds no bytes for it: a table of 100,000 file groups of 1 MiB placeholders fits in its memory;
- `GET /_bench/requests` (`?reset=1`: and start counting again): the S3 requests served since the last reset, by
  kind (LIST, GET, HEAD, PUT, POST: a DeleteObjects of up to 1,000 keys, DELETE: one key), as JSON.

`latency_ms` (GIANT_S3_LATENCY_MS in the server's environment): each S3 request waits that long before it is
served, outside the one-at-a-time lock, as a request to a real store waits on the network: requests in flight
together wait together.

    endpoint = GiantS3.start(log_path)
    endpoint.seed(local_table, "t")         # s3://giant/t
    os.environ.update(endpoint.env())       # this process's and its children's S3 clients reach it
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from loopback_server import free_port, stop, wait_listening  # noqa: E402
from s3_endpoint import ACCESS_KEY, REGION, SECRET_KEY  # noqa: E402

BUCKET = "giant"
KINDS = ("GET", "HEAD", "PUT", "POST", "DELETE")


@dataclass
class GiantS3:
    url: str
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, log_path: Path, timeout: float = 60.0, latency_ms: float = 0.0) -> GiantS3:
        port = free_port()
        log = open(log_path, "wb")  # noqa: SIM115 (the process writes it until stopped)
        process = subprocess.Popen([sys.executable, __file__, str(port)], stdout=log, stderr=subprocess.STDOUT,
                                   env={**os.environ, "GIANT_S3_LATENCY_MS": str(latency_ms)})
        endpoint = cls(f"http://127.0.0.1:{port}", process)
        wait_listening(process, port, "the moto server", log_path, timeout)
        endpoint.client().create_bucket(Bucket=BUCKET)
        return endpoint

    def env(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION, "AWS_ALLOW_HTTP": "true",
                "AWS_EC2_METADATA_DISABLED": "true"}

    def client(self) -> Any:
        import boto3
        return boto3.client("s3", endpoint_url=self.url, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def seed(self, folder: Path, key: str) -> int:
        """Put the table at `folder` under `key` (s3://giant/KEY); the number of objects."""
        answer = httpx.post(f"{self.url}/_bench/seed", params={"dir": str(folder), "key": key}, timeout=3600)
        answer.raise_for_status()
        return int(answer.json()["objects"])

    def fetch(self, key: str, folder: Path) -> list[str]:
        """Copy the objects of the table's `.hoodie` under `key` that `folder` does not have into it (what a plan
        wrote on S3)."""
        client, fetched = self.client(), []
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"{key}/.hoodie/"):
            for obj in page.get("Contents", []):
                rel = obj["Key"][len(key) + 1:]
                if ".." in Path(rel).parts or Path(rel).is_absolute():
                    raise SystemExit(f"refused: the key {obj['Key']} leads outside {folder}")
                if not (folder / rel).exists():
                    (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                    (folder / rel).write_bytes(client.get_object(Bucket=BUCKET, Key=obj["Key"])["Body"].read())
                    fetched.append(rel)
        return fetched

    def stop(self) -> None:
        stop(self.process)


def requests(reset: bool = False, url: str | None = None) -> dict[str, int]:
    """The requests the endpoint at `url` (default: AWS_ENDPOINT_URL) served since the last reset."""
    answer = httpx.get(f"{url or os.environ['AWS_ENDPOINT_URL']}/_bench/requests",
                       params={"reset": "1"} if reset else {}, timeout=60)
    answer.raise_for_status()
    return dict(answer.json())


def request_kind(environ: dict[str, Any], kinds: tuple[str, ...] = KINDS) -> str:
    """What an S3 request to moto's WSGI app is, as S3 bills it: LIST (a GET of the bucket with a prefix, a
    delimiter or `list-type`), else its method if among `kinds`, else "other"."""
    method = environ["REQUEST_METHOD"]
    path = environ.get("PATH_INFO", "").strip("/")
    query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
    if method == "GET" and "/" not in path and ("list-type" in query or "prefix" in query or "delimiter" in query):
        return "LIST"
    return method if method in kinds else "other"


def _seed(folder: str, key: str) -> int:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    s3 = s3_backends[DEFAULT_ACCOUNT_ID]["global"]
    for old in [k for k in list(s3.get_bucket(BUCKET).keys.keys()) if k.startswith(f"{key}/")]:
        s3.delete_object(BUCKET, old)
    objects = 0
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            st = os.stat(path)
            placeholder = st.st_size > 0 and st.st_blocks == 0
            with open(path, "rb") as f:
                data = b"" if placeholder else f.read()
            obj = s3.put_object(BUCKET, f"{key}/{os.path.relpath(path, folder)}", data)
            if placeholder:
                obj.contentsize = st.st_size  # what listings and HEAD report
            objects += 1
    return objects


def _serve(port: int) -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import run_simple
    from werkzeug.wrappers import Request, Response

    app = DomainDispatcherApplication(create_backend_app)
    latency = float(os.environ.get("GIANT_S3_LATENCY_MS") or 0) / 1000
    one_at_a_time = threading.Lock()
    served: Counter[str] = Counter()

    def handle(environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if latency and not path.startswith("/_bench/"):
            time.sleep(latency)
        with one_at_a_time:
            if path == "/_bench/seed":
                args = Request(environ).args
                body: dict[str, int] = {"objects": _seed(args["dir"], args["key"])}
            elif path == "/_bench/requests":
                body = dict(served)
                if Request(environ).args.get("reset"):
                    served.clear()
            else:
                served[request_kind(environ)] += 1
                return list(app(environ, start_response))
        return Response(json.dumps(body), mimetype="application/json")(environ, start_response)

    os.environ.setdefault("MOTO_PORT", str(port))
    run_simple("127.0.0.1", port, handle, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
