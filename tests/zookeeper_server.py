"""A private ZooKeeper server for the lock tests: Debian's `zookeeper` package (./dev test installs it), started
on a free port in a temporary folder and stopped at the end."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from kazoo.client import KazooClient

ZOOKEEPER_JAR = Path(os.environ.get("TMS_ZOOKEEPER_JAR", "/usr/share/java/zookeeper.jar"))
MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ZookeeperServer:
    def __init__(self, folder: Path):
        if not ZOOKEEPER_JAR.exists():
            raise RuntimeError(f"ZooKeeper is not installed ({ZOOKEEPER_JAR} missing): run the tests with ./dev test, "
                               "which installs Debian's zookeeper package, or set TMS_ZOOKEEPER_JAR")
        java = shutil.which("java")
        if java is None:
            raise RuntimeError("the ZooKeeper lock tests need java on PATH")
        self.folder = folder
        self.port = free_port()
        self.connect_string = f"127.0.0.1:{self.port}"
        cfg = folder / "zoo.cfg"
        (folder / "data").mkdir(parents=True, exist_ok=True)
        # tickTime 500: sessions may be as short as 1 s, so a killed holder's lock goes within seconds.
        cfg.write_text(f"tickTime=500\ndataDir={folder / 'data'}\nclientPort={self.port}\n"
                       "clientPortAddress=127.0.0.1\nmaxClientCnxns=200\nadmin.enableServer=false\n")
        self.log = open(folder / "server.log", "wb")
        self.process = subprocess.Popen(
            [java, "-Xmx256m", "-Dzookeeper.admin.enableServer=false", f"-Dzookeeper.log.dir={folder}",
             "-cp", f"/etc/zookeeper/conf:{ZOOKEEPER_JAR}", MAIN, str(cfg)],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self._wait_ready()

    def _wait_ready(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited with {self.process.returncode}: "
                                   f"{(self.folder / 'server.log').read_text()[-2000:]}")
            client = KazooClient(self.connect_string)
            try:
                client.start(timeout=2)
                client.get_children("/")
                return
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.3)
            finally:
                client.stop()
                client.close()
        self.stop()
        raise RuntimeError(f"ZooKeeper did not start on {self.connect_string} within {timeout_s} s")

    def lock_options(self, key: str, **extra: str) -> dict[str, str]:
        """Hudi's ZookeeperBasedLockProvider options for this server, the lock at /hudi/locks/<key> (the url is
        the connect string, as Hudi's provider takes it; the port is set too, as users set it)."""
        return {"hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider",
                "hoodie.write.lock.zookeeper.url": self.connect_string,
                "hoodie.write.lock.zookeeper.port": str(self.port),
                "hoodie.write.lock.zookeeper.base_path": "/hudi/locks", "hoodie.write.lock.zookeeper.lock_key": key,
                **extra}

    def client(self) -> KazooClient:
        client = KazooClient(self.connect_string, timeout=10)
        client.start(timeout=10)
        return client

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
