"""Chart axes that read at a glance: round ticks on evenly spaced rows, plain numbers.

plotext's own y ticks divide the data range evenly (16.0 / 12.4 / 8.9 / 5.3 / 1.8) and
land on uneven rows once rounded to the terminal's grid; its labels switch to
scientific notation (1.2e3, 9.6e2) past three digits. Here the y range is widened so
that round steps (1, 2, 2.5 or 5 times a power of ten) fall a whole number of rows
apart, so every tick sits the same number of rows from the next; labels are plain
numbers with SI suffixes (950, 1.2k, 2M) and integers wherever the step is whole.
"""

from __future__ import annotations

import math

NICE = (1.0, 2.0, 2.5, 5.0, 10.0)


def nice_step(raw: float) -> float:
    """The smallest round step (1, 2, 2.5, 5 x 10^k) at least `raw`."""
    if raw <= 0 or not math.isfinite(raw):
        return 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(n * power for n in NICE if n * power >= raw * (1 - 1e-9))


def label(value: float, step: float) -> str:
    """`value` as a plain number, with k/M/G past a thousand, as many decimals as the
    step needs (none when it is whole): never 1.2e3."""
    if abs(value) < step * 1e-6:
        value = 0.0
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return _plain(value / factor, step / factor) + suffix
    return _plain(value, step)


def _plain(value: float, step: float) -> str:
    # as many decimals as the step has (0.25 needs two, 0.5 one, 250 none)
    decimals = next((d for d in range(7) if abs(step * 10**d - round(step * 10**d)) < 1e-6), 6)
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def y_axis(lo: float, hi: float, rows: int) -> tuple[float, float, list[float]]:
    """(lower, upper, ticks) for a y axis of `rows` rows showing [lo, hi]: ticks a round
    step apart and `k` rows apart (2 to 4, whichever wastes least of the axis), the
    axis `rows - 1` rows of `step / k` each, so every tick sits on its own row and the
    rows between ticks are the same count everywhere."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return 0.0, 1.0, [0.0, 1.0]
    if hi <= lo:
        pad = abs(hi) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    span_rows = max(2, rows - 1)
    best: tuple[float, float, float, float] | None = None  # (waste, low, upper, step)
    for k in range(2, 5):
        if k > span_rows:
            break
        intervals = span_rows / k
        step = nice_step((hi - lo) / intervals)
        for _ in range(8):
            low = math.floor(lo / step + 1e-9) * step
            if low + step * intervals >= hi - 1e-9 * step:
                break
            step = nice_step(step * 1.0001)
        upper = low + step * intervals
        waste = (upper - low) / (hi - lo)
        if best is None or waste < best[0] - 1e-9:
            best = (waste, low, upper, step)
    assert best is not None
    _, low, upper, step = best
    ticks = [low + i * step for i in range(int((upper - low) / step + 1e-9) + 1)]
    return low, upper, ticks


MIN_X_STEP = 1.0  # every x axis counts whole things: seconds, tokens of context, rounds


def x_ticks(lo: float, hi: float, columns: int) -> list[float]:
    """Round ticks inside [lo, hi], about one per 10 columns, never closer than
    `MIN_X_STEP` (a live window under a second wide read 0.1 0.2 0.3 s); a span too
    narrow for one whole tick gets the nearest whole number to its start."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    step = max(MIN_X_STEP, nice_step((hi - lo) / max(1, columns // 10)))
    first = math.ceil(lo / step - 1e-9) * step
    ticks = [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]
    return ticks or [float(round(lo))]


def tick_step(ticks: list[float]) -> float:
    return ticks[1] - ticks[0] if len(ticks) > 1 else (abs(ticks[0]) if ticks else 1.0) or 1.0
