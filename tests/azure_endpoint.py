"""Azure Blob storage on loopback for the tests: Azurite (the npm package pinned by tests/azurite/package-lock.json,
installed by `./dev test` into .tools/azurite), in a process of its own, with a container.

`AzureEndpoint.start()` starts Azurite's blob service on a free port, in memory, and creates a container;
`env()` is what a client process needs to reach it (adlfs reads the connection string; object_store, and so
hudi-rs and obstore, read the account, key and the emulator's URL)."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopback_server import free_port, stop, wait_listening
from support import REPO

AZURITE = REPO / ".tools" / "azurite" / "node_modules" / ".bin" / "azurite-blob"
# Azurite's one well-known account (every emulator and SDK knows it; not a secret)
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="



@dataclass
class AzureEndpoint:
    url: str        # the account's blob endpoint: http://127.0.0.1:PORT/devstoreaccount1
    container: str
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, workdir: Path, container: str = "tms-lake", timeout: float = 60.0) -> AzureEndpoint:
        if not AZURITE.exists():
            raise AssertionError(f"Azurite is not installed at {AZURITE}: `./dev test` installs it "
                                 "(npm ci from tests/azurite/package-lock.json)")
        port = free_port()
        log_path = workdir / "azurite.log"
        log = open(log_path, "wb")  # noqa: SIM115 (the process writes it until stopped)
        process = subprocess.Popen(
            [str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence",
             "--skipApiVersionCheck", "--disableProductStyleUrl",
             "--disableTelemetry"],
            cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
        endpoint = cls(f"http://127.0.0.1:{port}/{ACCOUNT}", container, process)
        wait_listening(process, port, "Azurite", log_path, timeout)
        endpoint.client().create_container(container)
        return endpoint

    @property
    def connection_string(self) -> str:
        return (f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
                f"BlobEndpoint={self.url};")

    def env(self) -> dict[str, str]:
        """What a process needs to reach the endpoint: adlfs reads the connection string, object_store (hudi-rs,
        obstore) the account, its key and the emulator's URL."""
        return {"AZURE_STORAGE_CONNECTION_STRING": self.connection_string,
                "AZURE_STORAGE_ACCOUNT_NAME": ACCOUNT, "AZURE_STORAGE_ACCOUNT_KEY": ACCOUNT_KEY,
                "AZURE_STORAGE_USE_EMULATOR": "true", "AZURITE_BLOB_STORAGE_URL": self.url.rsplit("/", 1)[0],
                "AZURE_ALLOW_HTTP": "true"}

    def uri(self, key: str) -> str:
        return f"az://{self.container}/{key.strip('/')}"

    def client(self) -> Any:
        from azure.storage.blob import BlobServiceClient
        return BlobServiceClient.from_connection_string(self.connection_string)

    def key(self, uri: str) -> str:
        """The blob name of an `az://container/...` URI in the container."""
        return uri.split(f"{self.container}/", 1)[1]

    def keys(self, prefix: str) -> list[str]:
        """Every blob name under `prefix` (in the container)."""
        container = self.client().get_container_client(self.container)
        return sorted(b.name for b in container.list_blobs(name_starts_with=prefix))

    def stop(self) -> None:
        stop(self.process)
