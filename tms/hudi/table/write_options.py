"""Hudi write options given on the command line (`--option key=value`, repeatable): the table's concurrency
control (`hoodie.write.lock.*`, `hoodie.write.concurrency.mode`, the clock skew) for every command that changes
the timeline, and, for the writer, `hoodie.clustering.updates.strategy` and the file-sizing options
(`hoodie.parquet.small.file.limit` and its kin, see `small_files`)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..errors import HudiConfigError
from ..locks.config import ConcurrencyConfig, is_concurrency_option, parse_concurrency_options
from .small_files import OPTIONS as FILE_SIZING_OPTIONS
from .small_files import FileSizing

UPDATES_STRATEGY = "hoodie.clustering.updates.strategy"
_UPDATE_STRATEGY_PACKAGE = "org.apache.hudi.client.clustering.update.strategy."
ALLOW_UPDATES = _UPDATE_STRATEGY_PACKAGE + "SparkAllowUpdateStrategy"
REJECT_UPDATES = _UPDATE_STRATEGY_PACKAGE + "SparkRejectUpdateStrategy"


class OptionError(HudiConfigError):
    """A malformed or unknown `--option`."""


def parse_option_pairs(pairs: Iterable[str]) -> dict[str, str]:
    """`key=value` strings into a dict (the last value of a repeated key wins)."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise OptionError(f"--option {pair!r} is not hoodie.key=value")
        out[key.strip()] = value.strip()
    return out


def split_concurrency_options(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the concurrency-control options, the others)."""
    concurrency = {k: v for k, v in options.items() if is_concurrency_option(k)}
    return concurrency, {k: v for k, v in options.items() if k not in concurrency}


@dataclass(frozen=True)
class WriteOptions:
    concurrency: ConcurrencyConfig
    allow_updates_to_clustering: bool = False
    file_sizing: FileSizing = FileSizing()


def parse_write_options(options: Mapping[str, str], *, base_path: str, table_name: str) -> WriteOptions:
    """The writer's options; anything but concurrency control, the clustering update strategy and file sizing
    is refused."""
    concurrency, rest = split_concurrency_options(options)
    strategy = rest.pop(UPDATES_STRATEGY, REJECT_UPDATES)
    sizing = {k: rest.pop(k) for k in FILE_SIZING_OPTIONS if k in rest}
    if rest:
        raise OptionError(f"--option {sorted(rest)[0]} is not a write option TMS's writer takes "
                          f"(hoodie.write.lock.*, hoodie.write.concurrency.mode, {UPDATES_STRATEGY}, "
                          f"{', '.join(FILE_SIZING_OPTIONS)})")
    if strategy not in (ALLOW_UPDATES, REJECT_UPDATES):
        raise OptionError(f"{UPDATES_STRATEGY}={strategy} is not SparkAllowUpdateStrategy or SparkRejectUpdateStrategy "
                          f"({_UPDATE_STRATEGY_PACKAGE}...)")
    return WriteOptions(parse_concurrency_options(concurrency, base_path=base_path, table_name=table_name),
                        allow_updates_to_clustering=strategy == ALLOW_UPDATES,
                        file_sizing=FileSizing.from_options(sizing))
