"""TMS core: configuration, database and the Hudi table-format library shared by every role."""
# The format library reads no environment: the zone of LOCAL-timeline tables and the options of each storage
# root are passed in here, before any module reads a table.
import os as _os

from tms import timeline_zone as _timeline_zone  # noqa: F401
from tms.hudi.storage.table_storage import use_storage_options as _use_storage_options


def _storage_options(base_path: str) -> dict | None:
    if not _os.environ.get("TMS_STORAGE_ROOT_OPTIONS"):  # tms.storage_roots.ROOT_OPTIONS_ENV
        return None
    from tms.storage_roots import storage_options_of
    return storage_options_of(base_path)


_use_storage_options(_storage_options)
