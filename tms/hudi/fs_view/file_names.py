"""Names of base and log files: `<fileId>_<writeToken>_<instant>.<format>` (parquet, orc, hfile, lance) and
`.<fileId>_<instant>.log.<version>_<writeToken>`."""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

# Any extension: a base file of a format TMS cannot read must be seen (and refused), never skipped.
_BASE = re.compile(r"^(?!\.)([^_]+)_([^_]+)_(\d{14}(?:\d{3}){0,2})\.([A-Za-z0-9]+)$")  # see instant._TS
_LOG = re.compile(r"^\.([^_]+)_(\d+)\.log\.(\d+)_(.+)$")


def new_file_id(n: int = 0) -> str:
    return f"{uuid.uuid4()}-{n}"


def write_token(task_partition: int = 0, stage: int = 0, attempt: int = 0) -> str:
    return f"{task_partition}-{stage}-{attempt}"


@dataclass(frozen=True)
class BaseFileName:
    file_id: str
    write_token: str
    instant: str
    extension: str = "parquet"  # the base file format's, lower case

    @classmethod
    def parse(cls, name: str) -> BaseFileName | None:
        m = _BASE.match(name)
        return cls(m.group(1), m.group(2), m.group(3), m.group(4).lower()) if m else None

    def __str__(self) -> str:
        return f"{self.file_id}_{self.write_token}_{self.instant}.{self.extension}"


@dataclass(frozen=True)
class LogFileName:
    """`instant` is the slice's base instant on v6 tables and the writing delta commit's instant on v8+."""

    file_id: str
    instant: str
    version: int
    write_token: str

    @classmethod
    def parse(cls, name: str) -> LogFileName | None:
        """The parsed name (of a path's last component), or None if it is not a log file name."""
        m = _LOG.match(name.rsplit("/", 1)[-1])
        if not m:
            return None
        fid, instant, version, token = m.groups()
        return cls(fid, instant, int(version), token)

    @property
    def sort_key(self) -> tuple[str, int, str, str]:
        """Hudi's log file order: base instant, version, write token."""
        return (self.instant, self.version, self.write_token, self.file_id)

    def __lt__(self, other: LogFileName) -> bool:
        return self.sort_key < other.sort_key

    def __str__(self) -> str:
        return f".{self.file_id}_{self.instant}.log.{self.version}_{self.write_token}"
