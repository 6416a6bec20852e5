"""A host's measured noise: request-to-request spread, and drift across a restart.

Two figures decide how far apart two measurements of the same engine can read:
- request-to-request spread: the relative SD of step time between requests of one passage
  within one block, at a few points (text type, context); the paired interval already
  measures this per comparison, the profile keeps it so a typed figure can carry it;
- block-to-block shift: how far a whole block's step time moves from one block to the
  next with unchanged flags, across a restart or within one process (another job on the
  host, a neighbour on the same physical machine). No number of requests inside a block
  narrows it, so every A-B interval adds it (`Drift`).

The drift is heavy-tailed on a shared host: most blocks agree within a few percent, and
now and then one runs 30-45% slower for tens of seconds (seen here on the bundled engine:
more cycles per round, no steal time; twelve processes alive at once and read in turn all
agreed, so it is the time, not the process). A handful of shifts measures such a tail
badly, so an A-B comparison carries the drift widened for how few shifts measured it
(`drift_sd`: Student's t on their count, a prediction of the next shift), and
a finding that rests on step time alone across a restart is measured a second time before
it is reported (`experiments.baseline_confirm`), its own shifts joining the calibration's.

`specconsole calibrate HOST` measures both (console/experiments/calibrate.py) and the
history keeps them by host and flags. Pure: no I/O here.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from console.analysis.records import RequestSample
from console.analysis.student_t import t_quantile

Z95, Z99 = 1.96, 2.576
# A restart this quick makes bracketing (A-B-A-B) worth its two extra restarts.
CHEAP_RESTART_S = 60.0

# How much of the block-to-block variance is left in a comparison, by order. With each
# block carrying its own offset of variance s^2 (a shift between two blocks has variance
# 2 s^2 = shift_sd^2): A-B leaves s^2 (1 + 1) = shift_sd^2; A-B-A (the before side pooled
# from two blocks around the after one) leaves s^2 (1/2 + 1) = 0.75 shift_sd^2, and a drift
# linear in time cancels outright; side by side (interleaved request by request) leaves
# none of the time drift, but two processes may still differ (their memory layout, where
# their threads land): that offset is measured apart (`process_sd`, two engines with the
# same flags side by side) and is the whole of a side-by-side drift term.
# Both sides measured twice (A-B, then A-B again: a confirmed finding) leave each side's
# two block offsets averaged: s^2 (1/2 + 1/2) = 0.5 shift_sd^2; in general, a blocks
# before and b after leave s^2 (1/a + 1/b) = (1/a + 1/b) / 2 shift_sd^2 (`Drift.blocks`).
ORDER_SHARE = {"A-B": 1.0, "A-B-A-B": 0.75, "side-by-side": 1.0, "A-B twice": 0.5}
ORDER_TEXT = {
    "A-B": "A-B: the before block, the restart, the after block",
    "A-B-A-B": "A-B-A-B: half the before requests on each side of the after ones",
    "side-by-side": "side by side: two engines, interleaved request by request",
    "A-B twice": (
        "A-B twice: a step-time finding across a restart was measured again "
        "(each side in two blocks, a restart between each)"
    ),
}


def repeated_order(before: int, after: int) -> str:
    """The order's name for a comparison whose sides were read in `before` and `after`
    blocks, a restart between each: "A-B twice" for two a side, else "A-B repeated"."""
    return "A-B twice" if (before, after) == (2, 2) else "A-B repeated"


FEW_SHIFTS = 4  # fewer leave the drift widened over twice its estimate: the output says so


def t99(k: int) -> float:
    """Student's t for a two-sided 99% interval with `k` >= 1 degrees of freedom."""
    return t_quantile(0.99, k)


def sd_beyond_noise(shifts: Sequence[float], var_noise: Sequence[float], *, widened: bool) -> float:
    """The SD of `shifts` beyond what their own timing noise explains (each shift's
    square less its own noise variance, never below zero, then averaged); with
    `widened`, for how few shifts measured it: x t99(k) / Z99, so a 99% term on it is
    Student's t prediction of the next shift (x3.85 from two shifts, x1.57 from five,
    x1.23 from ten).

    Each shift answers for its own noise only: one block that a spell made noisy (its
    requests 40% apart) would otherwise take its noise off every calm shift's drift,
    and left the drift term at 0.0% while the blocks' own shifts read -13%."""
    if not shifts:
        return 0.0
    if len(var_noise) != len(shifts):  # no noise per shift: the mean for each
        var_noise = [statistics.fmean(var_noise) if var_noise else 0.0] * len(shifts)
    beyond = [max(0.0, d * d - v) for d, v in zip(shifts, var_noise, strict=True)]
    sd = math.sqrt(statistics.fmean(beyond))
    return sd * t99(len(shifts)) / Z99 if widened else sd


@dataclass(frozen=True)
class Drift:
    """The drift term one comparison carries: the host's block-to-block shift SD (log
    scale), the order the blocks were measured in, and where the shift came from."""

    shift_sd: float
    order: str = "A-B"
    source: str = "no drift measured"
    measured: bool = False
    # (blocks before, blocks after) where each side was read in several blocks at their
    # own times (a confirmed finding): the share of the drift left is (1/a + 1/b) / 2
    blocks: tuple[int, int] | None = None

    @property
    def share(self) -> float:
        """How much of the block-to-block drift variance is left, by order."""
        if self.blocks is not None:
            a, b = self.blocks
            return (1 / a + 1 / b) / 2
        return ORDER_SHARE.get(self.order, 1.0)

    @classmethod
    def none(cls, order: str = "A-B") -> Drift:
        return cls(0.0, order, "no drift measured", measured=False)

    def term(self, z: float = Z95) -> float:
        """The half-width (log scale; 95% by default, `z` for another level) the drift
        adds to a time figure's change."""
        return z * self.shift_sd * math.sqrt(self.share)

    def text(self) -> str:
        """One line for the output: which order, and the drift term in the intervals."""
        order = ORDER_TEXT.get(self.order, self.order)
        if self.blocks is not None and self.order != "A-B twice":
            order = (f"{self.order}: a step-time finding across a restart was measured again "
                     f"({self.blocks[0]} blocks before, {self.blocks[1]} after, a restart "
                     "between each)")  # fmt: skip
        if self.order == "side-by-side":
            if not self.measured:
                return (f"measured {order}: drift cancels; intervals hold timing noise "
                        "(no offset between two processes measured: `specconsole "
                        "calibrate`)")  # fmt: skip
            return (f"measured {order}: drift cancels; change intervals include the two "
                    f"processes' offset ± {self.term(Z99):.1%} ({self.source})")  # fmt: skip
        if not self.measured:
            return (f"measured {order}; no drift measured for this host: the intervals hold "
                    "timing noise only (`specconsole calibrate HOST` measures it)")  # fmt: skip
        return (f"measured {order}; change intervals include the host's drift "
                f"± {self.term(Z99):.1%} ({self.source})")  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {"shift_sd": self.shift_sd, "order": self.order, "source": self.source,
                "measured": self.measured, "term": self.term(Z99), "level": 0.99,
                "blocks": list(self.blocks) if self.blocks else None}  # fmt: skip


@dataclass(frozen=True)
class PointNoise:
    """Request-to-request spread of step time at one point: relative SD and requests."""

    text_type: str
    context: int
    rel_sd: float
    n: int

    def as_dict(self) -> dict[str, Any]:
        return {"text_type": self.text_type, "context": self.context,
                "rel_sd": self.rel_sd, "n": self.n}  # fmt: skip


@dataclass(frozen=True)
class NoiseProfile:
    """One host's measured noise with one set of flags."""

    host: str
    engine: str
    flags_hash: str
    points: tuple[PointNoise, ...]
    shifts: tuple[float, ...]  # log(block i+1 / block i) of step time, one per restart
    restart_s: tuple[float, ...]  # how long each restart took to ready
    measured_at: float = field(default_factory=time.time)
    notes: tuple[str, ...] = ()
    # the part of each shift's square that the blocks' own request noise explains (its
    # squared standard error): a comparison's paired interval already holds that part
    shift_var_noise: tuple[float, ...] = ()
    # log(B / A) of step time between two engine processes with the same flags measured
    # side by side, and the part of each square their timing noise explains
    process_offsets: tuple[float, ...] = ()
    process_var_noise: tuple[float, ...] = ()

    @property
    def shift_sd(self) -> float:
        """The drift's estimated SD: the RMS of the measured shifts (a shift either way is
        drift) less what the blocks' own timing noise explains, never below zero."""
        return sd_beyond_noise(self.shifts, self.shift_var_noise, widened=False)

    @property
    def drift_sd(self) -> float:
        """The drift SD every comparison across time carries: `shift_sd` widened for the
        number of shifts that measured it (Student's t: two shifts x3.85, five x1.57, ten
        x1.23), because a few shifts measure a drift badly, its tail worst."""
        return sd_beyond_noise(self.shifts, self.shift_var_noise, widened=True)

    @property
    def process_sd(self) -> float:
        """The offset between two processes' step time beyond their timing noise (as
        `shift_sd`, from the side-by-side blocks); 0 when none was measured. The point
        estimate, not a bound: time drift cancels side by side, and what is left (two
        processes' layouts) showed no tail here (twelve processes at once agreed)."""
        return sd_beyond_noise(self.process_offsets, self.process_var_noise, widened=False)

    def with_shifts(self, shifts: Sequence[tuple[float, float]]) -> NoiseProfile:
        """This profile with more measured shifts (log shift, its noise variance): a
        comparison's own blocks of one condition, which measured the drift at its time."""
        return dataclasses.replace(
            self, shifts=self.shifts + tuple(d for d, _ in shifts),
            shift_var_noise=self.shift_var_noise + tuple(v for _, v in shifts),
        )  # fmt: skip

    def block_offsets(self) -> list[float]:
        """Each block's log step time against the first block's: the shifts summed."""
        return [0.0, *itertools.accumulate(self.shifts)]

    @property
    def spell_blocks(self) -> tuple[int, ...]:
        """The blocks (0 = the first) that ran apart from the rest: a slow spell of the
        host. A block's offset is its step time against the first block's (the shifts
        summed); one more than 3 robust SDs (1.4826 x MAD) and 3 of its own timing noise
        *slower* than the blocks' median is a spell, when at most a third of the blocks
        are. A block that ran faster is the host's own drift, and stays in it."""
        offsets = self.block_offsets()
        if len(offsets) < 4:
            return ()
        middle = statistics.median(offsets)
        mad = 1.4826 * statistics.median(abs(o - middle) for o in offsets)
        noise = math.sqrt(statistics.fmean(self.shift_var_noise)) if self.shift_var_noise else 0.0
        out = tuple(i for i, o in enumerate(offsets) if o - middle > 3 * max(mad, noise))
        return out if len(out) <= len(offsets) // 3 else ()

    def calm(self) -> NoiseProfile:
        """This profile without its spell blocks: the shifts between the calm blocks on
        either side of each (a spell's in and out become one shift). What a comparison
        whose own blocks were checked against each other carries (`baseline_confirm`):
        a block of it that a spell hit was measured again and left out."""
        spells = set(self.spell_blocks)
        if not spells:
            return self
        offsets = self.block_offsets()
        calm = [i for i in range(len(offsets)) if i not in spells]
        noise = statistics.fmean(self.shift_var_noise) if self.shift_var_noise else 0.0
        return dataclasses.replace(
            self, shifts=tuple(offsets[j] - offsets[i] for i, j in itertools.pairwise(calm)),
            shift_var_noise=(noise,) * (len(calm) - 1),
        )  # fmt: skip

    @property
    def restart_time(self) -> float | None:
        return statistics.median(self.restart_s) if self.restart_s else None

    @property
    def cheap_restart(self) -> bool:
        """Whether the measured restart is under a minute (unmeasured: not cheap)."""
        restart = self.restart_time
        return restart is not None and restart < CHEAP_RESTART_S

    def order(self) -> str:
        """Bracketing when a restart is cheap (under a minute), else A-B."""
        return "A-B-A-B" if self.cheap_restart else "A-B"

    def drift(self, order: str | None = None) -> Drift:
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(self.measured_at))
        order = order or self.order()
        if order == "side-by-side":
            source = (f"calibrated on {self.host} {when} UTC, "
                      f"{len(self.process_offsets)} pair(s) of processes")  # fmt: skip
            return Drift(self.process_sd, order, source, measured=bool(self.process_offsets))
        source = (f"calibrated on {self.host} {when} UTC, flags {self.flags_hash}, "
                  f"{len(self.shifts)} shift(s), widened for their count")  # fmt: skip
        if len(self.shifts) < FEW_SHIFTS:
            source += f"; more blocks narrow it: `specconsole calibrate {self.host}`"
        return Drift(self.drift_sd, order, source, measured=True)

    def spread_at(self, text_type: str, context: float) -> PointNoise | None:
        """The measured point nearest `context` for this text type (else any type)."""
        same = [p for p in self.points if p.text_type == text_type] or list(self.points)
        return min(same, key=lambda p: abs(p.context - context), default=None)

    def lines(self) -> list[str]:
        out = [f"{self.host}: noise profile for flags {self.flags_hash} ({self.engine})"]
        for p in self.points:
            out.append(f"  {p.text_type} at context {p.context}: request-to-request step "
                       f"time ± {p.rel_sd:.1%} (1 SD, {p.n} requests)")  # fmt: skip
        shifts = ", ".join(f"{math.expm1(d):+.1%}" for d in self.shifts) or "none"
        out.append(
            f"  block-to-block shift with unchanged flags: {shifts}; beyond the blocks' own "
            f"request noise a drift of {self.shift_sd:.1%} (1 SD), {self.drift_sd:.1%} "
            f"widened for {len(self.shifts)} shift(s) (Student's t) "
            f"(drift term ± {self.drift('A-B').term(Z99):.1%} on A-B at 99%)"
        )
        spells = self.spell_blocks
        if spells:
            offsets = self.block_offsets()
            middle = statistics.median(offsets)
            apart = ", ".join(f"block {i + 1} {math.expm1(offsets[i] - middle):+.0%}"
                              for i in spells)  # fmt: skip
            out.append(f"  a slow spell of the host: {apart} against the others' median; "
                       f"without it the drift is {self.calm().shift_sd:.1%} (what a comparison "
                       "that reads each side twice carries)")  # fmt: skip
        if self.process_offsets:
            offsets = ", ".join(f"{math.expm1(d):+.1%}" for d in self.process_offsets)
            out.append(f"  two processes with the same flags, side by side: {offsets}; an "
                       f"offset of {self.process_sd:.1%} beyond their noise (1 SD)")  # fmt: skip
        restart = self.restart_time
        if restart is not None:
            out.append(
                f"  restart to ready: {restart:.1f} s -> across restarts, the default "
                f"order is {self.order()} (side by side where the host holds both)"
            )
        return out + [f"  {n}" for n in self.notes]

    def as_dict(self) -> dict[str, Any]:
        return {
            "host": self.host, "engine": self.engine, "flags_hash": self.flags_hash,
            "points": [p.as_dict() for p in self.points], "shifts": list(self.shifts),
            "restart_s": list(self.restart_s), "measured_at": self.measured_at,
            "notes": list(self.notes), "shift_sd": self.shift_sd, "drift_sd": self.drift_sd,
            "order": self.order(),
            "shift_var_noise": list(self.shift_var_noise),
            "process_offsets": list(self.process_offsets), "process_sd": self.process_sd,
            "process_var_noise": list(self.process_var_noise),
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NoiseProfile:
        return cls(
            host=data["host"], engine=data["engine"], flags_hash=data["flags_hash"],
            points=tuple(PointNoise(p["text_type"], int(p["context"]), float(p["rel_sd"]),
                                    int(p["n"])) for p in data.get("points", ())),
            shifts=tuple(float(d) for d in data.get("shifts", ())),
            restart_s=tuple(float(r) for r in data.get("restart_s", ())),
            measured_at=float(data.get("measured_at", 0.0)),
            notes=tuple(data.get("notes", ())),
            shift_var_noise=tuple(float(v) for v in data.get("shift_var_noise", ())),
            process_offsets=tuple(float(v) for v in data.get("process_offsets", ())),
            process_var_noise=tuple(float(v) for v in data.get("process_var_noise", ())),
        )  # fmt: skip


def point_spreads(samples: Sequence[RequestSample]) -> tuple[PointNoise, ...]:
    """Per point (text type, context): the relative SD of step time between requests of
    the same passage (log scale, pooled over passages), from one block's requests."""
    groups: dict[tuple[str, int], dict[str, list[float]]] = {}
    for s in samples:
        if s.ok and s.decode_time_s and s.verify_steps:
            point = groups.setdefault((s.text_type, s.context_tokens), {})
            point.setdefault(s.prompt_id, []).append(math.log(s.decode_time_s / s.verify_steps))
    out = []
    for (kind, context), passages in sorted(groups.items()):
        resid = [x - statistics.fmean(v) for v in passages.values() if len(v) >= 2 for x in v]
        df = len(resid) - sum(1 for v in passages.values() if len(v) >= 2)
        if df >= 1:
            out.append(PointNoise(kind, context, math.sqrt(sum(r * r for r in resid) / df),
                                  len(resid)))  # fmt: skip
    return tuple(out)
