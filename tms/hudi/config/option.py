"""One Hudi option: its key, the older keys Hudi still reads it under, its default and its parser (what
hudi-rs's `ConfigParser` gives each option)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..errors import HudiError

T = TypeVar("T")


@dataclass(frozen=True)
class HudiOption(Generic[T]):
    key: str
    default: T
    parse: Callable[[str, str], T]  # (key, value set) -> the typed value; raises one line on a bad value
    aliases: tuple[str, ...] = ()   # read, in this order, when the key is unset
    # A blank value counts as unset (Hudi's isNullOrEmpty checks); False: a blank value is parsed as set.
    blank_is_unset: bool = True

    def raw(self, options: Mapping[str, str]) -> str | None:
        """The value set under the key, else under its first alias set; None when none is."""
        for key in (self.key, *self.aliases):
            value = options.get(key)
            if value is not None and (value != "" or not self.blank_is_unset):
                return value
        return None

    def value(self, options: Mapping[str, str]) -> T:
        """The typed value of the option in `options`, its default when unset."""
        raw = self.raw(options)
        return self.default if raw is None else self.parse(self.key, raw)


# --- parsers ---------------------------------------------------------------------------------

def text(_key: str, value: str) -> str:
    return value


def optional_text(_key: str, value: str) -> str | None:
    return value


def is_true(_key: str, value: str) -> bool:
    """Only `true` is true (as the library has always read `hoodie.properties` flags)."""
    return value == "true"


def field_list(_key: str, value: str) -> tuple[str, ...]:
    """Comma-separated field names, trimmed, blanks dropped."""
    return tuple(f.strip() for f in value.split(",") if f.strip())


def integer(key: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise HudiError(f"{key} must be an integer, got {value!r}") from None


N = TypeVar("N", int, float)


def number_at_least(kind: Callable[[str], N], least: int, *, error: type[HudiError] = HudiError,
                    noun: str = "a number") -> Callable[[str, str], N]:
    """A number of `kind`, at least `least` (`error` otherwise, calling the value `noun` when it is none)."""
    def parse(key: str, value: str) -> N:
        try:
            number = kind(value)
        except ValueError:
            raise error(f"{key}={value} is not {noun}") from None
        if number < least:
            raise error(f"{key}={value} must be at least {least}")
        return number
    return parse


def boolean(key: str, value: str) -> bool:
    """`true` or `false`, any case, surrounding blanks ignored; anything else refused."""
    if value.strip().lower() not in ("true", "false"):
        raise HudiError(f"{key} must be true or false, got {value!r}")
    return value.strip().lower() == "true"
