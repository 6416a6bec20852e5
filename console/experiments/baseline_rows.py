"""A baseline's rows: one point (text type, context) before and after a change.

Each row holds tok/s, commit and step time on both sides under the comparison protocol
(`pairing.paired_figures`: balanced and paired by passage, commit exact under greedy
decoding, the host's drift in every time interval) and the decomposition verdict at that
point (`same_point`), so the row names the factor that is off. `comparison_lines` is the
one rendering the CLI prints and the TUI shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from console.analysis import format as fmt
from console.analysis.comparison import FigurePair
from console.analysis.noise_profile import Drift
from console.analysis.pairing import paired_figures
from console.analysis.records import RequestSample
from console.analysis.same_point import SamePointVerdict, factor_sentence, judge_same_point
from console.analysis.sequential import ONE_LOOK

if TYPE_CHECKING:
    from console.measure.methods import MethodResult


@dataclass(frozen=True)
class BaselineRow:
    """One baseline point (text type, context) before and after the change: each figure
    pooled on both sides with its interval, and the interval of its change
    (`FigurePair`: a = before, b = after)."""

    text_type: str
    context: int
    decode_tok_s: FigurePair
    commit_len: FigurePair
    step_time_s: FigurePair
    n_before: int = 0
    n_after: int = 0
    verdict: SamePointVerdict | None = None  # the decomposition at this point

    @property
    def factors(self) -> list[tuple[str, FigurePair]]:
        """The factors whose change is a finding (its interval excludes no change)."""
        pairs = (("commit", self.commit_len), ("step time", self.step_time_s))
        return [(label, pair) for label, pair in pairs if pair.finding]

    @property
    def moved(self) -> str:
        """The factors whose change is a finding, with their intervals, or a sentence
        saying none is."""
        found = [f"{label} {pair.change_text()}" for label, pair in self.factors]
        if self.verdict is not None and len(found) <= 1:
            return factor_sentence(self.verdict)  # the one factor, and what it means
        return ", ".join(found) or "neither factor moved beyond noise"

    def as_dict(self) -> dict[str, Any]:
        def side(pair: FigurePair) -> dict[str, Any]:
            fraction = pair.change.fraction if pair.change else None
            iv = pair.a_interval, pair.b_interval
            return {
                "before": pair.a,
                "after": pair.b,
                "change": fraction,
                "before_interval": iv[0].as_dict() if iv[0] else None,
                "after_interval": iv[1].as_dict() if iv[1] else None,
                "change_interval": pair.moved.as_dict() if pair.moved else None,
            }

        return {
            "text_type": self.text_type,
            "context": self.context,
            "n_before": self.n_before,
            "n_after": self.n_after,
            "decode_tok_s": side(self.decode_tok_s),
            "commit_len": side(self.commit_len),
            "step_time_s": side(self.step_time_s),
            "moved": self.moved,
            "factors_moved": [label for label, _ in self.factors],
            "verdict": self.verdict.as_dict() if self.verdict else None,
            "pooled": True,
            "paired": self.verdict is not None,
        }


def compare_samples(
    before: Sequence[RequestSample],
    after: Sequence[RequestSample],
    *,
    seed: int = 0,
    drift: Drift | None = None,
    looks: tuple[float, ...] = ONE_LOOK,
) -> list[BaselineRow]:
    """Per (text type, context) measured on both sides: the figures and changes under the
    comparison protocol (`pairing.paired_figures`: balanced and paired by passage, the
    host's drift in every time interval, 99% over all rows together, spent over `looks`
    where the comparison reads on). `seed` is kept for callers; nothing is drawn."""
    del seed
    groups: dict[tuple[str, int], tuple[list[RequestSample], list[RequestSample]]] = {}
    for index, samples in enumerate((before, after)):
        for s in samples:
            groups.setdefault((s.text_type, s.context_tokens), ([], []))[index].append(s)
    rows = []
    judged = sum(1 for b, a in groups.values() if b and a)  # the rows judged together
    for (text_type, context), (b, a) in sorted(groups.items()):
        paired = paired_figures(b, a, drift=drift, rows=judged, looks=looks) if b and a else None
        if paired is None:
            continue
        pairs = paired.pairs
        rows.append(
            BaselineRow(
                text_type=text_type,
                context=context,
                decode_tok_s=pairs["decode_tok_s"],
                commit_len=pairs["commit_len"],
                step_time_s=pairs["step_time_s"],
                n_before=sum(1 for s in b if s.ok),
                n_after=sum(1 for s in a if s.ok),
                verdict=judge_same_point(paired, f"{text_type} at context {context}"),
            )
        )
    return rows


def baseline_comparison(
    before: MethodResult,
    after: MethodResult,
    *also_before: MethodResult,
    drift: Drift | None = None,
    looks: tuple[float, ...] = ONE_LOOK,
) -> list[BaselineRow]:
    """Per text type: tok/s, commit and step time before and after, and what moved.
    `also_before`: further blocks of the before condition (a bracket's second half)."""
    samples = list(before.samples) + [s for r in also_before for s in r.samples]
    return compare_samples(samples, after.samples, drift=drift, looks=looks)


HEADERS = ("text", "context", "figure", "before", "after", "change", "n", "which factor moved")


def comparison_lines(rows: list[BaselineRow]) -> list[str]:
    """The comparison as aligned text lines (the CLI prints them): its table, then what
    the figures are."""
    return [*comparison_table(rows), f"  {COMPARISON_NOTE}"]


def comparison_table(rows: list[BaselineRow]) -> list[str]:
    """Per point a row each for tok/s, commit and step time, pooled with [95% interval]
    (the TUI shows it unwrapped, the note under it wrapped)."""
    table_rows = []
    for r in rows:
        figures = (
            ("tok/s", r.decode_tok_s, fmt.TOK_S),
            ("commit", r.commit_len, fmt.COMMIT),
            ("step ms", r.step_time_s, fmt.STEP_MS),
        )
        for i, (label, pair, figure) in enumerate(figures):
            first = i == 0
            table_rows.append(
                (
                    r.text_type if first else "",
                    str(r.context) if first else "",
                    label,
                    fmt.interval(pair.a_interval, figure),
                    fmt.interval(pair.b_interval, figure),
                    pair.change_text(),
                    f"{r.n_before}/{r.n_after}" if first else "",
                    r.moved if first else "",
                )
            )
    return fmt.table(HEADERS, table_rows, right={1, 6}).splitlines()


# What the comparison's figures are, said under its table.
COMPARISON_NOTE = (
    "pooled per side over the passages both sides read, equal weight each (tokens / steps "
    "/ decode time) [95% interval]; changes paired by passage [99% over all rows "
    "together]; a change is a finding only when its interval excludes no change"
)
