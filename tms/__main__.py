"""`python -m tms`: the `tms` command."""
from tms.entry import main

main()
