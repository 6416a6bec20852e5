"""The product's thresholds and error levels, in one place.

The statistical model (docs/model.md) says how far a figure can sit from another by
chance; these numbers say what is worth telling an operator. They are choices, not
estimates: change one here and every command, the TUI and the benchmarks follow.

What change is worth calling:
- `MATTERS`: an unexplained change (the verdict's residual, a factor of the split, a
  span of `twopoint`) smaller than 10% is not worth a bug hunt even when its interval
  excludes no change; at or beyond it, a change whose interval excludes none is "not
  physics". A factor (context, text) "moved" by the same bound.
- `WIDE`: an interval that reaches past ± 15% cannot tell physics from a change that
  matters: "not enough evidence", and the benchmark does not count such an answer wrong
  on a true effect within the same bound.

When the model itself is in doubt:
- `BAD_FIT`: a swept point more than 15% off the step line: the linear step model fits
  badly and the verdict says so (a rough fit).
- `FALL`: a step line that falls more than 5% over the sweep is a measurement problem
  (attention cost cannot fall with context).
- `EDGE`: a figure up to 10% past the swept contexts is "inside" (no extrapolation
  beyond that).
- `TYPE_TOL`: an observed commit within 10% of a text type's could be that type (the
  type is then inferred only when exactly one fits).

How narrow a measurement reads before it stops:
- `TARGET_REL`: each point's pooled tok/s interval within ± 5%;
- `PAIRED_TIMING_TARGET`: a paired timing change within ± 10% before side by side stops.

How narrow is a precision target, not a test: stopping when an interval's width is
reached does not depend on where the estimate lies (its spread does not move with it),
so it raises no false alarms of its own, and the answer is judged once, at the end.

Error levels (the model's, not the product's): intervals shown are 95%, and "too wide"
is read from them; a comparison's rows are judged together at 99% family-wise
(Bonferroni over its rows) for "not physics"; a comparison that reads on (across a
restart, up to `MAX_BLOCKS` a side) spends that 1% over its looks with an
O'Brien-Fleming-type function (`sequential`: at four equal looks z 5.49, 3.80, 3.04,
2.60 for one row), so the chance of a false change over all its looks is at most 1%; a
settled typed figure is checked against its measured point at 99% (two checks a settle,
about 1% false alarms each), and so is a baseline against the model's prediction for it
(a check that refuses an answer). Each answer is read by one function (`answer`).
"""

from __future__ import annotations

MATTERS = 0.10
WIDE = 0.15
BAD_FIT = 0.15
FALL = 0.05
EDGE = 0.10
TYPE_TOL = 0.10
TARGET_REL = 0.05
PAIRED_TIMING_TARGET = 0.10

LEVEL = 0.95  # every interval shown
CHANGE_LEVEL = 0.99  # a comparison's rows, family-wise
CHECK_LEVEL = 0.99  # a typed figure against its settled point
# Requests a verify round from which live figures are a batch's (the streams' sum), not
# one request's: the sweep's model is of one request alone.
BATCHED = 1.05
