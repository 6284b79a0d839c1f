"""The service's port, checked by `tms up` before it starts anything: free, or a one-line TMSError saying
what holds it — another TMS (recognised by its API: the OpenAPI document's title; named by its data directory,
URL and pid when it is a `tms up` of this machine), a process (named by psutil when this user may see it) or an
unknown socket — and how to choose another (`--port`, and for a second TMS a `--data-dir` of its own)."""
from __future__ import annotations

import errno
import http.client
import json
import socket
from pathlib import Path

import psutil

from tms import local_instances
from tms.errors import TMSError

PROBE_SECONDS = 2.0  # a socket that accepts and never answers (not an HTTP server) costs this, once
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
_ANY = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def is_free(host: str, port: int) -> bool:
    """Whether the service could listen on host:port now (with SO_REUSEADDR, as uvicorn binds)."""
    with socket.socket(_family(host), socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as e:
            if e.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise TMSError(f"cannot listen on {host}:{port}: {e.strerror}") from None
    return True


def tms_version_at(host: str, port: int) -> str | None:
    """The version of the TMS answering at host:port, None when what answers (if anything) is not TMS. The
    standard library's client: no TLS context to build, nothing more to load (this runs before the CLI has)."""
    host = _ANY.get(host, host)
    connection = http.client.HTTPConnection(host, port, timeout=PROBE_SECONDS)
    try:
        connection.request("GET", "/openapi.json")
        answer = connection.getresponse()
        document = json.loads(answer.read(MAX_DOCUMENT_BYTES)) if answer.status == 200 else None
    except (OSError, http.client.HTTPException, ValueError):
        return None
    finally:
        connection.close()
    info = document.get("info") if isinstance(document, dict) else None
    if isinstance(info, dict) and info.get("title") == "TMS":
        return str(info.get("version") or "of an unknown version")
    return None


def listener(port: int) -> psutil.Process | None:
    """The process listening on `port`, when this user may see it (root sees every process)."""
    try:
        connections = psutil.net_connections(kind="inet")
    except (psutil.Error, OSError):
        return None
    for connection in connections:
        if (connection.status == psutil.CONN_LISTEN and connection.laddr and connection.laddr.port == port
                and connection.pid):
            try:
                return psutil.Process(connection.pid)
            except psutil.Error:
                return None
    return None


def _describe(process: psutil.Process | None) -> str:
    if process is None:
        return ""
    try:
        command = " ".join(process.cmdline()) or process.name()
    except psutil.Error:
        return f"pid {process.pid}"
    command = " ".join(command.split())  # one line, whatever the command line holds
    command = command if len(command) <= 80 else command[:79] + "…"
    return f"pid {process.pid}: {command}"


def free_port_after(host: str, port: int, tries: int = 50) -> int | None:
    return next((p for p in range(port + 1, min(port + 1 + tries, 65536)) if is_free(host, p)), None)


def _local_tms(port: int) -> local_instances.LocalInstance | None:
    """The `tms up` of this machine whose service listens on `port`, if one is recorded."""
    return next((i for i in local_instances.running() if i.url.rsplit(":", 1)[-1] == str(port)), None)


def holder(host: str, port: int) -> tuple[str, bool]:
    """What holds host:port, in a few words, and whether it is a TMS."""
    process = _describe(listener(port))
    version = tms_version_at(host, port)
    if version is not None:
        mine = _local_tms(port)
        if mine is not None:
            return f"the TMS running from {mine.data_dir} (pid {mine.pid}, {mine.url}, version {version})", True
        return f"another TMS (version {version}{', ' + process if process else ''})", True
    return (f"another process ({process})" if process else "another process or socket"), False


def another_data_dir(data_dir: Path) -> Path:
    """A data directory beside `data_dir` for a second TMS (.tms -> .tms-2)."""
    return data_dir.with_name(f"{data_dir.name}-2")


def ensure_free(host: str, port: int, data_dir: Path | None = None) -> None:
    """Nothing when the service can listen on host:port; else one line saying what holds it and what to do
    (to start a second TMS beside one holding the port: another port and, `data_dir` given, another data
    directory)."""
    if is_free(host, port):
        return
    other = free_port_after(host, port)
    what, is_tms = holder(host, port)
    if is_tms and data_dir is not None:
        second = f"--data-dir {another_data_dir(data_dir)}" + (f" --port {other}" if other else " --port <port>")
        raise TMSError(f"port {port} of {host} is in use by {what}: use it, or start a second TMS with a data "
                       f"directory and port of its own, e.g. {second}")
    choose = f"choose another with --port, e.g. --port {other}" if other else "choose another with --port"
    raise TMSError(f"port {port} of {host} is in use by {what}: stop it, or {choose}")
