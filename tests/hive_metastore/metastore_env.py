"""What the Hive Metastore tests need, installed once per machine: the standalone metastore server and its
dependencies as pom.xml beside this file pins them, resolved by Maven from Maven Central into its local
repository (checksums checked) and their class path written to .tools/hive-metastore/. Run by `./dev test` and
by the metastore's session fixture (a no-op when the class path is written and every jar in it is there);
prints what it found, or fails with one line naming what is missing.

    python tests/hive_metastore/metastore_env.py"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
POM = HERE / "pom.xml"
CACHE = REPO / ".tools" / "hive-metastore"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"


class MetastoreEnvError(RuntimeError):
    """Something the metastore needs could not be had; the message is one line naming it."""


def maven_repository() -> Path:
    return Path(os.environ.get("TMS_MAVEN_REPO", Path.home() / ".m2" / "repository"))


def _classpath_file() -> Path:
    """Where the class path of this pom.xml is written (a changed pom resolves anew)."""
    digest = hashlib.sha256(POM.read_bytes() + str(maven_repository()).encode()).hexdigest()[:16]
    return CACHE / f"classpath-{digest}.txt"


def classpath() -> list[Path]:
    """The metastore's jars, resolved by Maven when the class path of this pom.xml is not written yet or names a
    jar no longer there."""
    written = _classpath_file()
    if written.is_file():
        jars = [Path(p) for p in written.read_text().strip().split(os.pathsep) if p]
        if jars and all(j.is_file() for j in jars):
            return jars
    CACHE.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            ["mvn", "-q", "-B", "-f", str(POM), f"-Dmaven.repo.local={maven_repository()}", "--strict-checksums",
             "-Dmaven.wagon.http.retryHandler.count=3", f"{DEPENDENCY_PLUGIN}:build-classpath",
             f"-Dmdep.outputFile={written}"], capture_output=True, text=True, timeout=1800)
    except FileNotFoundError:
        raise MetastoreEnvError("mvn is not installed: cannot fetch the Hive Metastore") from None
    if done.returncode != 0 or not written.is_file():
        errors = [line for line in done.stdout.splitlines() if line.startswith("[ERROR]")] or ["(no output)"]
        raise MetastoreEnvError(f"Maven could not resolve {POM.relative_to(REPO)} from Maven Central: {errors[0]}")
    return [Path(p) for p in written.read_text().strip().split(os.pathsep) if p]


def main() -> int:
    try:
        jars = classpath()
    except MetastoreEnvError as exc:
        print(f"hive metastore: {exc}", file=sys.stderr)
        return 1
    server = next((j.name for j in jars if j.name.startswith("hive-standalone-metastore-server")), "no server jar")
    print(f"hive metastore: {server} and {len(jars) - 1} more jars")
    return 0


if __name__ == "__main__":
    sys.exit(main())
