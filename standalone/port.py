"""The service's port, checked by `tms up` before it starts anything: free, or a one-line TMSError saying
what holds it — another TMS (recognised by its API: the OpenAPI document's title), a process (named by
psutil when this user may see it) or an unknown socket — and how to choose another (`--port`)."""
from __future__ import annotations

import errno
import http.client
import json
import socket

import psutil

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


def holder(host: str, port: int) -> str:
    """What holds host:port, in a few words."""
    process = _describe(listener(port))
    version = tms_version_at(host, port)
    if version is not None:
        return f"another TMS (version {version}{', ' + process if process else ''})"
    return f"another process ({process})" if process else "another process or socket"


def ensure_free(host: str, port: int) -> None:
    """Nothing when the service can listen on host:port; else one line saying what holds it and what to do."""
    if is_free(host, port):
        return
    other = free_port_after(host, port)
    choose = f"choose another with --port, e.g. --port {other}" if other else "choose another with --port"
    raise TMSError(f"port {port} of {host} is in use by {holder(host, port)}: stop it, or {choose}")
