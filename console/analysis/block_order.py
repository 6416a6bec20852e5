"""Which order two stored runs were measured in, read from their requests' times.

A comparison's drift term depends on the order its sides were read in (`noise_profile.
ORDER_SHARE`): two blocks at two times carry the host's block-to-block shift; two runs
interleaved request by request (side by side: `set --baseline`'s default where the host
holds both engines) carry none of it, only the offset between two processes. The history
keeps every request's time, so `history explain` reads the order instead of assuming the
worst: interleaved when the requests of A and B alternate (a stretch of one run's requests
is one or two long: the pair's order flips each round), two blocks otherwise (also when
they overlap in some other way, the cautious reading). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from console.analysis.records import RequestSample

# Side by side, a round of P pairs gives 2P requests in 2P - 1 stretches (the order flips
# between rounds); with two passages P >= 2, so at least 3/4 of the requests start a
# stretch. Two blocks give 2 stretches, A-B-A-B 4, whatever their length.
INTERLEAVED_SHARE = 0.6
LEAST = 2  # requests on each side before an alternation means anything


def stretches(a: Sequence[RequestSample], b: Sequence[RequestSample]) -> int:
    """How many runs of consecutive requests from one side the two make in time order."""
    merged = sorted([(s.t, 0) for s in a] + [(s.t, 1) for s in b])
    return sum(1 for i, (_, side) in enumerate(merged) if i == 0 or side != merged[i - 1][1])


def interleaved(a: Sequence[RequestSample], b: Sequence[RequestSample]) -> bool:
    """Whether A's and B's requests were read alternately (side by side)."""
    if min(len(a), len(b)) < LEAST:
        return False
    return stretches(a, b) >= INTERLEAVED_SHARE * (len(a) + len(b))


def measured_order(a: Sequence[RequestSample], b: Sequence[RequestSample]) -> str:
    """The order (`noise_profile.ORDER_SHARE`'s names) two runs' requests were read in:
    "side-by-side" when they alternate, else "A-B"."""
    return "side-by-side" if interleaved(a, b) else "A-B"
