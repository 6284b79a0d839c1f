"""Discovery's rule for commit callbacks (TMS_DISCOVERY_ADMIT_CALLBACKS): a trusted sender's callback from an
unregistered table under a storage root onboards it (tms.fleet) instead of being refused; a table TMS cannot
serve is recorded as refused with the reason, and the callback is refused as before."""
from __future__ import annotations

import logging
from collections.abc import Callable

from tms.config import Settings
from tms.db import Database
from tms.fleet.onboarding import onboard_path
from tms.hudi.storage.paths import InvalidBasePathError, is_under_roots, normalize_base_path
from tms.table_context import table_context

log = logging.getLogger(__name__)


def callback_admission(database: Database, settings: Settings) -> Callable[[str], bool] | None:
    """The intake's `admit` (True: the base path is registered now), or None when the rule is off."""
    if not settings.service.discovery_admit_callbacks or not settings.storage_roots:
        return None
    roots = [normalize_base_path(r) for r in settings.storage_roots]
    context = table_context(settings)

    def admit(base_path: str) -> bool:
        try:
            path = normalize_base_path(base_path)
        except InvalidBasePathError:
            return False
        root = next((r for r in roots if is_under_roots(path, [r])), None)
        if root is None:
            return False
        report = onboard_path(database, path, root, context=context)
        if report.refused:
            log.info("callback from %s: not registered: %s", path, report.refused[0]["reason"])
        return bool(report.registered or report.known)
    return admit
