"""The ops CLI's library: an HTTP client of the TMS API (`client`), the options every ops command takes
(`options`), and the output of human tables or JSON (`output`). The commands, one module per group, are in
`commands` and are mounted on the `tms` app."""
