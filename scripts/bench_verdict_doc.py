"""Write the latest `bench verdict` table into docs/bench-verdict.md from a saved run.

    specconsole bench verdict local --runs 3 --save bench-verdict.json
    python scripts/bench_verdict_doc.py bench-verdict.json [--host local] [--doc FILE]

The table is printed by the command's own `print_bench`, from the trials the JSON keeps,
so the page shows what the command printed and nothing typed by hand. Only the part
between the page's two markers is replaced; the prose around it stays.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "bench-verdict.md"
BEGIN = "<!-- bench-verdict:begin -->"
END = "<!-- bench-verdict:end -->"


def _trial(t: dict[str, Any]):
    from console.analysis.verdict_scoring import Trial

    return Trial(t["scenario"], t["run"], t["truth"], t["outcome"], t["true_effect"],
                 t["headline"], path=t["path"], seconds=t.get("seconds", 0.0),
                 constructed=t.get("constructed_effect"))  # fmt: skip


def result_of(saved: dict[str, Any]):
    """The `BenchResult` a `--save FILE` (or `--json`) wrote, rebuilt from its trials."""
    from console.experiments.verdict_result import BenchResult

    trials = [_trial(t) for t in saved["trials"]]
    return BenchResult(
        trials, saved["params"], saved["flags_before"], saved.get("flags_after"),
        seconds=saved.get("seconds", 0.0), status=saved.get("status", "complete"),
        timings=saved.get("timings", {}),
    )  # fmt: skip


def command_of(params: dict[str, Any], host: str) -> str:
    """The command line that gives this run's table (defaults left out)."""
    from console.experiments.verdict_bench import PATH_NAMES, SCENARIOS

    words = ["specconsole", "bench", "verdict", host, "--runs", str(params["runs"])]
    if list(params.get("scenarios", SCENARIOS)) != list(SCENARIOS):
        words += ["--scenarios", ",".join(params["scenarios"])]
    if list(params.get("paths", PATH_NAMES)) != list(PATH_NAMES):
        words += ["--paths", ",".join(params["paths"])]
    return " ".join(words)


def region(saved: dict[str, Any], host: str) -> str:
    from console.commands.verdict_bench import print_bench

    result = result_of(saved)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_bench(result)
    return "\n".join([
        BEGIN,
        "Written by `python scripts/bench_verdict_doc.py` from the run saved with "
        f"`--save` ({result.status}):",
        "",
        "```",
        f"$ {command_of(result.params, host)}",
        printed.getvalue().rstrip("\n"),
        "```",
        END,
    ])  # fmt: skip


def rewrite(doc: str, new_region: str) -> str:
    """`doc` with the text between its markers replaced; a ValueError if it has none."""
    start, end = doc.find(BEGIN), doc.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the page has no {BEGIN} ... {END} markers to write between")
    return doc[:start] + new_region + doc[end + len(END) :]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("saved", type=Path, help="the JSON `bench verdict --save FILE` wrote")
    parser.add_argument("--host", default="local", help="the host the run measured")
    parser.add_argument("--doc", type=Path, default=DOC, help="the page to write into")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    try:
        saved = json.loads(args.saved.read_text())
        page = rewrite(args.doc.read_text(), region(saved, args.host))
    except (OSError, ValueError, KeyError) as exc:
        what = f"no field {exc}" if isinstance(exc, KeyError) else str(exc)
        print(f"bench_verdict_doc: cannot write {args.doc}: {what}.", file=sys.stderr)
        return 1
    args.doc.write_text(page)
    print(f"wrote the table into {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
