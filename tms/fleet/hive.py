"""A sync from a Hive Metastore database (tms.fleet.catalog): its tables as the metastore's Thrift API gives them
(through `pymetastore`'s generated client), recorded under the root `hive://<database>`.

Only the calls Hive 3 and 4 both serve are used (`get_database`, `get_all_tables`,
`get_table_objects_by_name_req`): Hive 4's metastore no longer answers the older `get_table`."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from tms.db import Database
from tms.db.errors import NotFoundError
from tms.errors import ConfigError
from tms.hudi.context import DEFAULT_CONTEXT, HudiContext

from .catalog import PROVIDER_PARAMETER, CatalogTable, sync_catalog_tables
from .onboarding import ScanReport

TABLES_PER_REQUEST = 100
TIMEOUT_SECONDS = 30.0
NOT_INSTALLED = "the Hive Metastore sync needs pymetastore: install TMS with its `hive` extra"


def metastore_address(uri: str) -> tuple[str, int]:
    """(host, port) of one `thrift://host:port` metastore URI."""
    parts = urlsplit(uri.strip())
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "thrift" or not parts.hostname or port is None:
        raise ConfigError(f"the Hive Metastore URI {uri!r} is not thrift://host:port")
    return parts.hostname, port


def metastore_uris(uris: str) -> list[str]:
    """The URIs of a comma-separated list, as Hive's `hive.metastore.uris` names the metastores of one
    highly available service (each checked: ConfigError)."""
    listed = [uri.strip() for uri in uris.split(",") if uri.strip()]
    for uri in listed:
        metastore_address(uri)
    return listed


@contextmanager
def metastore_client(uri: str, timeout: float = TIMEOUT_SECONDS) -> Iterator[Any]:
    """A Thrift client of the metastore at `uri`, connected (ConfigError: unreachable)."""
    try:
        from pymetastore.hive_metastore import ThriftHiveMetastore
        from thrift.protocol.TBinaryProtocol import TBinaryProtocol
        from thrift.transport import TSocket, TTransport
    except ImportError:
        raise ConfigError(NOT_INSTALLED) from None
    host, port = metastore_address(uri)
    socket = TSocket.TSocket(host, port)
    socket.setTimeout(timeout * 1000)
    transport = TTransport.TBufferedTransport(socket)
    try:
        transport.open()
    except TTransport.TTransportException as exc:
        raise ConfigError(f"cannot reach the Hive Metastore at {uri}: {exc}") from None
    try:
        yield ThriftHiveMetastore.Client(TBinaryProtocol(transport))
    finally:
        transport.close()


def catalog_table(table: Any) -> CatalogTable:
    """A table as the metastore's Thrift `Table` gives it."""
    descriptor = table.sd
    return CatalogTable(database=table.dbName, name=table.tableName,
                        location=(descriptor.location if descriptor else None) or None,
                        input_format=(descriptor.inputFormat if descriptor else None) or None,
                        provider=(table.parameters or {}).get(PROVIDER_PARAMETER))


def hive_tables(client: Any, database: str) -> list[CatalogTable]:
    """Every table of the metastore database (NotFoundError: it has none of that name)."""
    from pymetastore.hive_metastore.ttypes import GetTablesRequest, NoSuchObjectException

    try:
        client.get_database(database)
    except NoSuchObjectException:
        raise NotFoundError(f"the Hive Metastore has no database {database!r}") from None
    names = sorted(client.get_all_tables(database))
    tables: list[CatalogTable] = []
    for start in range(0, len(names), TABLES_PER_REQUEST):
        batch = names[start:start + TABLES_PER_REQUEST]
        result = client.get_table_objects_by_name_req(GetTablesRequest(dbName=database, tblNames=batch))
        tables.extend(catalog_table(t) for t in result.tables or [])
    return tables


def catalog_root(database: str) -> str:
    """What discovery records as the root of the tables a metastore database lists."""
    return f"hive://{database}"


def sync_hive_database(database: Database, hive_database: str, *, metastore_uri: str | None,
                       storage_roots: list[str], policies: dict[str, Any] | None = None,
                       refresh: Callable[[], None] | None = None,
                       context: HudiContext = DEFAULT_CONTEXT) -> ScanReport:
    """Read the metastore database's tables and sync them (`catalog.sync_catalog_tables`). `metastore_uri` may
    list several metastores (comma-separated, as `hive.metastore.uris`): they are tried in order, as Hive's own
    client does, and the first that answers is read. NotFoundError: the metastore has no such database;
    ConfigError: no metastore is configured, or none can be read. Either way nothing changed."""
    if not metastore_uri:
        raise ConfigError("no Hive Metastore is configured: set TMS_HIVE_METASTORE_URI (thrift://host:port)")
    try:
        from thrift.Thrift import TException
    except ImportError:
        raise ConfigError(NOT_INSTALLED) from None
    failures: list[str] = []
    for uri in metastore_uris(metastore_uri):
        try:
            with metastore_client(uri) as client:
                tables = hive_tables(client, hive_database)
            break
        except NotFoundError:
            raise
        except ConfigError as exc:
            failures.append(str(exc))
        except (TException, OSError) as exc:
            failures.append(f"cannot read the Hive Metastore database {hive_database!r} at {uri}: {exc}")
    else:
        raise ConfigError("; ".join(failures))
    return sync_catalog_tables(database, tables, catalog_root(hive_database), storage_roots=storage_roots,
                               policies=policies, refresh=refresh, context=context)
