"""TMS core: configuration, database and the Hudi table-format library shared by every role."""
# The format library reads no environment: the zone of LOCAL-timeline tables and the options of each storage
# root are passed in here, before any module reads a table.
from tms import storage_roots as _storage_roots  # noqa: F401
from tms import timeline_zone as _timeline_zone  # noqa: F401
