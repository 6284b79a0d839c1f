"""The options every ops command takes: where the service is (`--url`, TMS_URL), who calls it (`--token`,
TMS_TOKEN) and `--json`; and the conversions of repeatable `key=value` options."""
from __future__ import annotations

import sys
from typing import Annotated

import click
import typer

from tms.errors import TMSError

from .client import DEFAULT_URL, TmsClient

Url = Annotated[str, typer.Option("--url", envvar="TMS_URL", help="The TMS service.")]
Token = Annotated[str | None, typer.Option("--token", envvar="TMS_TOKEN", show_default=False,
                                           help="An API token (tms tokens create) [env: TMS_TOKEN]")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of tables.")]

__all__ = ["DEFAULT_URL", "GLOBAL_OPTIONS", "Json", "Token", "Url", "after_the_subcommand", "confirm", "connect",
           "key_values", "one_of"]

# The options every ops command takes, which may also come before the subcommand (`tms --json tasks list`):
# the name, and whether it takes a value.
GLOBAL_OPTIONS = {"--json": False, "--url": True, "--token": True}


def after_the_subcommand(args: list[str]) -> list[str]:
    """The command line with the global options given before the subcommand moved after it, where the
    subcommand takes them: `--json tasks list` -> `tasks list --json` (before a `--`, if there is one)."""
    moved: list[str] = []
    i = 0
    while i < len(args):
        name, has_value, _ = args[i].partition("=")
        if name not in GLOBAL_OPTIONS:
            break
        width = 2 if GLOBAL_OPTIONS[name] and not has_value else 1
        moved += args[i:i + width]
        i += width
    if not moved:
        return args
    rest = args[i:]
    end = rest.index("--") if "--" in rest else len(rest)
    return [*rest[:end], *moved, *rest[end:]]


def connect(url: str, token: str | None) -> TmsClient:
    return TmsClient(url, token)


def key_values(pairs: list[str] | None, option: str, *, empty_is_none: bool = False) -> dict[str, str | None]:
    """`["k=v", ...]` as a dict; `k=` maps k to None when `empty_is_none` (e.g. back to a default)."""
    values: dict[str, str | None] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise TMSError(f"{option} {pair!r} is not key=value")
        value = value.strip()
        values[key.strip()] = None if (empty_is_none and not value) else value
    return values


def one_of(value: str | None, allowed: tuple[str, ...], option: str, *, upper: bool = False) -> str | None:
    """`value` (case-folded) if it is one of `allowed`, None if not given; else a one-line TMSError."""
    if value is None:
        return None
    value = value.upper() if upper else value.lower()
    if value not in allowed:
        raise TMSError(f"{option} must be one of {', '.join(allowed)}, not {value!r}")
    return value


def confirm(question: str, refused: str) -> None:
    """Ask `question` on the terminal; a TMSError saying `refused` unless the answer is yes. Without a terminal
    (a script) nothing is asked and the answer is no."""
    answer = False
    if sys.stdin.isatty():
        try:
            answer = typer.confirm(question, err=True)
        except (click.exceptions.Abort, typer.Abort):
            answer = False
    if not answer:
        raise TMSError(f"{refused} (--yes skips the question)")
