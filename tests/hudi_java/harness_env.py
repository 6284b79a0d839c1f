"""What the Java harness needs, installed once per machine: Hudi's Spark bundles and Hadoop's S3A connector
pinned in hudi-versions.toml (fetched by Maven into its local repository and checked against the pinned SHA-1)
and the harness's own PySpark 3.5 environment (pyproject.toml and uv.lock beside this file, synced by uv into
.tools/). Run by `./dev test` and by the harness's session fixture; prints what it found, or fails with one
line naming what is missing.

    python tests/hudi_java/harness_env.py"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PINS = HERE / "hudi-versions.toml"
VENV = REPO / ".tools" / "hudi-java-venv"
UV = REPO / ".tools" / "uv" / "bin" / "uv"


class HarnessEnvError(RuntimeError):
    """Something the harness needs could not be had; the message is one line naming it."""


@dataclass(frozen=True)
class HudiRelease:
    table_version: int
    hudi: str
    bundle: str  # group:artifact:version
    sha1: str
    jar: Path


def maven_repository() -> Path:
    return Path(os.environ.get("TMS_MAVEN_REPO", Path.home() / ".m2" / "repository"))


def _jar_path(coordinates: str) -> Path:
    group, artifact, version = coordinates.split(":")
    return maven_repository().joinpath(*group.split("."), artifact, version, f"{artifact}-{version}.jar")


def _sha1(path: Path) -> str:
    digest = hashlib.sha1()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def releases() -> dict[int, HudiRelease]:
    """The pinned releases by table version (nothing fetched)."""
    pins = tomllib.loads(PINS.read_text())["table_version"]
    return {int(v): HudiRelease(int(v), p["hudi"], p["bundle"], p["sha1"], _jar_path(p["bundle"]))
            for v, p in pins.items()}


def fetch_bundle(release: HudiRelease) -> Path:
    """The release's bundle in the Maven repository, fetched by Maven when absent; its SHA-1 checked."""
    return _fetch(release.bundle, release.sha1, f"(Hudi {release.hudi}, table version {release.table_version})")


def s3a_jars() -> list[Path]:
    """Hadoop's S3A connector and its AWS SDK, as pinned, fetched when absent and checked."""
    pins = tomllib.loads(PINS.read_text())["s3a"]
    return [_fetch(p["artifact"], p["sha1"], "(Hadoop's S3A connector)") for p in pins]


def _fetch(coordinates: str, sha1: str, what: str) -> Path:
    jar = _jar_path(coordinates)
    if not (jar.is_file() and _sha1(jar) == sha1):
        try:
            done = subprocess.run(
                ["mvn", "-q", "-B", f"-Dmaven.repo.local={maven_repository()}", "-Dtransitive=false",
                 "-Dmaven.wagon.http.retryHandler.count=3", "--strict-checksums",
                 "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:get", f"-Dartifact={coordinates}"],
                capture_output=True, text=True, timeout=1800)
        except FileNotFoundError:
            raise HarnessEnvError(f"mvn is not installed: cannot fetch {coordinates}") from None
        if done.returncode != 0 or not jar.is_file():
            raise HarnessEnvError(f"Maven could not fetch {coordinates} {what} from Maven Central")
    actual = _sha1(jar)
    if actual != sha1:
        raise HarnessEnvError(f"{jar} has SHA-1 {actual}, hudi-versions.toml pins {sha1}")
    return jar


def harness_python() -> Path:
    """The harness venv's python, synced from uv.lock (hashes checked; a no-op when it already agrees)."""
    if not UV.is_file():
        raise HarnessEnvError(f"uv is not installed at {UV}: run ./dev test once")
    env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(VENV), "UV_PYTHON_DOWNLOADS": "never",
           "UV_PYTHON": sys.executable}
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run([str(UV), "sync", "--locked", "--quiet", "--project", str(HERE)], env=env,
                          capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise HarnessEnvError(f"the harness's PySpark environment (tests/hudi_java/uv.lock) did not install: {last}")
    return VENV / "bin" / "python"


def ensure() -> tuple[Path, dict[int, Path]]:
    """Everything the harness needs: (its python, the bundle jar by table version)."""
    python = harness_python()
    return python, {version: fetch_bundle(release) for version, release in releases().items()}


def main() -> int:
    try:
        python, jars = ensure()
        connectors = s3a_jars()
    except HarnessEnvError as exc:
        print(f"hudi harness: {exc}", file=sys.stderr)
        return 1
    pinned = ", ".join(f"v{v}: Hudi {r.hudi}" for v, r in releases().items())
    print(f"hudi harness: {python} with {pinned} ({len(jars)} bundles and {len(connectors)} S3A jars checked)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
