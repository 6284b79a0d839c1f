"""`tms indexes list|build|drop`: a table's metadata-table partitions (over the API)."""
from __future__ import annotations

from typing import Annotated

import typer

from ..options import DEFAULT_URL, Json, Token, Url, confirm, connect
from ..output import output_for
from .table_ref import table_id

app = typer.Typer(help="A table's metadata-table indexes: those built, a build (a worker runs it), a drop.",
                  no_args_is_help=True)
Ref = Annotated[str, typer.Argument(help="The table: its id, name or database.name.", show_default=False)]
Partition = Annotated[str, typer.Argument(help="files, column_stats, bloom_filters, record_index, "
                                               "partition_stats, or secondary_index_<name> (with --column).",
                                          show_default=False)]
Column = Annotated[str | None, typer.Option("--column", help="The column a secondary index indexes.")]


@app.command("list")
def list_indexes(ref: Ref, url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """The metadata-table partitions built, and those being built."""
    with connect(url, token) as client:
        listed = client.get(f"/tables/{table_id(client, ref)}/indexes")
    output_for(as_json).show(listed, f"table {listed['table_id']}: built {', '.join(listed['built']) or '-'}; "
                                     f"building {', '.join(listed['building']) or '-'}")


@app.command("build")
def build(ref: Ref, partition: Partition, column: Column = None, url: Url = DEFAULT_URL, token: Token = None,
          as_json: Json = False) -> None:
    """Build a metadata-table partition (admin): Hudi's indexing action, run by a worker while writers go on."""
    body = {"partition": partition} | ({"column": column} if column else {})
    with connect(url, token) as client:
        task = client.post(f"/tables/{table_id(client, ref)}/indexes", body)
    output_for(as_json).show(task, f"build of {partition} requested: task {task['id']} "
                                   f"({task['service']} {task['instant']}, {task['state']})")


@app.command("drop")
def drop(ref: Ref, partition: Partition,
         yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
         url: Url = DEFAULT_URL, token: Token = None, as_json: Json = False) -> None:
    """Drop a metadata-table partition (admin); dropping `files` drops the metadata table."""
    with connect(url, token) as client:
        tid = table_id(client, ref)
        if not yes:
            confirm(f"drop metadata partition {partition} of table {tid}?", "nothing dropped")
        client.delete(f"/tables/{tid}/indexes/{partition}")
    output_for(as_json).show({"table_id": tid, "partition": partition, "dropped": True},
                             f"table {tid}: metadata partition {partition} dropped")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="indexes")
