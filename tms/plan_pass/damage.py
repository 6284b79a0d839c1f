"""Lost and damaged files, looked for on each planning pass: the files the table's latest completed commits wrote
(those it still needs, tms.hudi.table.lost_files) are each looked up on storage, a few requests and never a
listing of the table. One found missing, truncated or empty raises `table_damaged` (table), naming the files;
while it fires, the files of every retained commit are looked up, and it resolves once none is lost. The
table's health drops while it fires (tms.fleet.health)."""
from __future__ import annotations

from sqlalchemy.orm import Session

from tms.db import AlertRepo
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.lost_files import damaged_files

TABLE_DAMAGED = "table_damaged"
LATEST_COMMITS = 3   # the commits whose files each pass looks up
_NAMED = 5           # files named in the alert's message (its details list up to _LISTED)
_LISTED = 100


def _subject(table_id: int) -> str:
    return f"table:{table_id}"


def check_damaged_files(session: Session, table_id: int, base_path: str, table: HudiTable) -> None:
    """Raise, renew or resolve the table's `table_damaged` alert from what storage has of its latest commits'
    files (of every retained commit's while the alert fires)."""
    alerts = AlertRepo(session)
    firing = alerts.open_alert(TABLE_DAMAGED, _subject(table_id)) is not None
    damaged = damaged_files(table, latest=None if firing else LATEST_COMMITS)
    if not damaged:
        if firing:
            alerts.resolve(f"{TABLE_DAMAGED}:{_subject(table_id)}")
        return
    named = "; ".join(d.line() for d in damaged[:_NAMED]) + (f"; and {len(damaged) - _NAMED} more"
                                                           if len(damaged) > _NAMED else "")
    alerts.raise_alert(kind=TABLE_DAMAGED, severity="critical", table_id=table_id,
                       fingerprint=f"{TABLE_DAMAGED}:{_subject(table_id)}", subject=_subject(table_id),
                       message=f"{base_path} lost {len(damaged)} file(s) its commits wrote: {named}",
                       details={"files": [d.path for d in damaged[:_LISTED]], "count": len(damaged)})


def reported_damaged_files(session: Session, table_id: int) -> list[str]:
    """The files the table's firing `table_damaged` alert names (none when it does not fire)."""
    alert = AlertRepo(session).open_alert(TABLE_DAMAGED, _subject(table_id))
    return list((alert.details or {}).get("files") or []) if alert is not None else []
