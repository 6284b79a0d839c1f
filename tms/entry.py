"""The `tms` command's entry point (and `python -m tms`). Loading the whole CLI takes seconds (the table
format, the database layer, the roles); `tms up` checks its port before that, so a busy port is told at once."""
from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["up"]:
        from standalone.cli import check_port_first  # light: the port check and the `up` options only
        check_port_first(sys.argv[2:])
    from tms.cli import main as cli_main
    cli_main()
