"""`specconsole` subcommands, one module per area; `console.cli` assembles the parser."""
