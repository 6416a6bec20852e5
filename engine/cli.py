"""`specengine`: the engine's command line (`serve`, `train`).

`python -m engine.cli serve ...` works too. Subcommand flags are parsed by the subcommand
itself, so `specengine serve --help` is exactly the server's own help.
"""

from __future__ import annotations

import sys

USAGE = """usage: specengine {serve,train} [flags]

commands:
  serve   Serve the DDTree engine over an OpenAI- and SGLang-compatible HTTP API.
  train   Train the bundled target and drafter from local text.

Run `specengine COMMAND --help` for a command's flags."""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "serve":
        from engine.serve.cpu_threads import apply_cpu_defaults

        apply_cpu_defaults()  # before torch loads: its OpenMP runtime reads these once
        from engine.serve.launch import main as serve_main

        return serve_main(rest)
    if command == "train":
        from engine.train.cli import main as train_main

        return train_main(rest) or 0
    sys.stderr.write(f"specengine: error: unknown command {command!r}; expected serve or train.\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
