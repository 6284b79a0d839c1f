"""The Hudi writer options that send a table's commits to TMS as they complete (Hudi's HTTP commit callback),
as the API, the CLI and the table page give them: the callback's URL is the service's public URL
(TMS_PUBLIC_URL, else the URL the request came in by); the key is named by where to find it, never given."""
from __future__ import annotations

import hmac
from pathlib import Path

from fastapi import Request

from tms.config import Settings

CALLBACK_PATH = "/api/v1/hudi/callback"
CALLBACK_ON = "hoodie.write.commit.callback.on"
CALLBACK_URL = "hoodie.write.commit.callback.http.url"
CALLBACK_API_KEY = "hoodie.write.commit.callback.http.api.key"
# Where `tms up` keeps the service-wide key it made (standalone.credentials), in its data directory.
KEPT_KEY_FILE = "callback-key"


def callback_url(settings: Settings, request: Request) -> str:
    return (settings.service.public_url or str(request.base_url)).rstrip("/") + CALLBACK_PATH


def callback_key_hint(settings: Settings, *, table_has_own_key: bool) -> str:
    """Where the writers find the key to send, in place of the key itself."""
    service_key = settings.service.callback_key.get_secret_value() if settings.service.callback_key else None
    if table_has_own_key:
        return "<the table's own callback key, given at its registration" + (
            ", or the service's TMS_CALLBACK_KEY>" if service_key else ">")
    if service_key is None:
        return "<none set: give the table a callback key, or the service a TMS_CALLBACK_KEY>"
    kept = _kept_key_file(settings.data_dir, service_key)
    return f"<the callback key in {kept}>" if kept else "<the service's TMS_CALLBACK_KEY>"


def _kept_key_file(data_dir: Path, service_key: str) -> Path | None:
    """The file `tms up` keeps the service's key in, if that is where it came from."""
    path = (data_dir / KEPT_KEY_FILE).absolute()
    try:
        kept = path.read_text().strip()
    except OSError:
        return None
    return path if hmac.compare_digest(kept.encode(), service_key.encode()) else None


def writer_options(settings: Settings, request: Request, *, table_has_own_key: bool) -> dict[str, str]:
    """The three options, as a writer sets them."""
    return {CALLBACK_ON: "true", CALLBACK_URL: callback_url(settings, request),
            CALLBACK_API_KEY: callback_key_hint(settings, table_has_own_key=table_has_own_key)}
