"""Log files of a file slice for the merge property tests: a list of blocks written as Hudi writes them."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from tms.hudi.log_format.log_file import avro_data_block, delete_block, parquet_data_block, rollback_command_block


def write_log_files(root: Path, blocks: list[tuple[str, Any]], data: Callable[[Any, str], pa.Table],
                    deletes: Callable[[Any], list[tuple]], schema: dict, delete_ordering: Any) -> list[str]:
    """Write `blocks` ((kind, arg): "data" rows as `data(arg, instant)` makes them, Avro and Parquet blocks in
    turn; "delete" keys as `deletes(arg)` gives them; "rollback" of the arg-th block) into a few log files
    under `root`, the i-th block at instant 2024010200000<i>; the files' names, in order."""
    contents = []
    for i, (kind, arg) in enumerate(blocks):
        instant = f"2024010200000{i:04d}"
        if kind == "data":
            encode = parquet_data_block if i % 2 else avro_data_block  # both block formats
            contents.append(encode(data(arg, instant), schema, instant))
        elif kind == "delete":
            contents.append(delete_block(deletes(arg), instant, delete_ordering))
        else:
            contents.append(rollback_command_block(f"2024010200000{arg:04d}", instant))
    return write_three_to_a_file(root, contents)


def write_three_to_a_file(root: Path, contents: list[bytes]) -> list[str]:
    """Encoded blocks written three to a log file under `root` (a few log files); the files' names, in order."""
    logs = []
    for start in range(0, len(contents), 3):
        logs.append(f"log.{start + 2}" if start + 3 <= len(contents) else "log.last")
        (root / logs[-1]).write_bytes(b"".join(contents[start:start + 3]))
    return logs
