"""A real Hive Metastore for the tests: Hive's standalone metastore server (pinned in pom.xml beside this file),
in a JVM of its own on a free loopback port, with an embedded Derby database that DataNucleus creates on start
(`datanucleus.schema.autoCreateAll`: the server jar ships no schematool scripts) in a scratch folder.
`HiveMetastore.start()` returns once the metastore answers a Thrift call; `stop()` ends its JVM."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from loopback_server import free_port, stop, wait_listening

from .metastore_env import classpath


@dataclass
class HiveMetastore:
    uri: str
    port: int
    warehouse: Path
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, workdir: Path, timeout: float = 240.0) -> HiveMetastore:
        jars = classpath()
        port = free_port()
        conf = workdir / "conf"
        conf.mkdir(parents=True)
        warehouse = workdir / "warehouse"
        warehouse.mkdir()
        settings = {
            "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={workdir / 'metastore_db'};create=true",
            "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
            "datanucleus.schema.autoCreateAll": "true",
            "metastore.schema.verification": "false",
            "metastore.warehouse.dir": warehouse.as_uri(),
            "metastore.thrift.port": str(port),
            "metastore.thrift.bind.host": "127.0.0.1",
        }
        (conf / "metastore-site.xml").write_text("<configuration>\n" + "".join(
            f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
            for k, v in settings.items()) + "</configuration>\n")
        log_path = workdir / "metastore.log"
        log = open(log_path, "wb")  # noqa: SIM115 (the JVM writes it until stopped)
        process = subprocess.Popen(
            ["java", "-Xmx512m", f"-Dderby.system.home={workdir}", "-cp",
             ":".join([str(conf), *map(str, jars)]), "org.apache.hadoop.hive.metastore.HiveMetaStore"],
            stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
        metastore = cls(f"thrift://127.0.0.1:{port}", port, warehouse, process)
        wait_listening(process, port, "the Hive Metastore", log_path, timeout)
        try:
            with metastore.client() as client:
                client.get_all_databases()
        except Exception:
            stop(process)
            raise
        return metastore

    def client(self) -> Any:
        """A connected Thrift client (a context manager), as TMS's own sync connects."""
        from tms.fleet.hive import metastore_client

        return metastore_client(self.uri)

    def stop(self) -> None:
        stop(self.process)
