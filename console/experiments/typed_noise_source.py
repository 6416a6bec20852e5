"""Where a typed figure's noise comes from when a calibration is stored.

`specconsole calibrate HOST` measures this host's request-to-request spread and its
block-to-block drift once per host and flags and keeps the profile in the history store
(`RunStore.noise_profile`). `calibration_profile` is the one place the typed verdict reads
it, turned into the typed figures' own terms (`analysis/typed_noise.py`): each calibrated
point's spread of log step time with its degrees of freedom, and the drift a typed
baseline measured at another time may carry (the 95% term of the host's block-to-block
shift, widened for how few shifts measured it). With no profile it returns None, and typed
figures carry the stored sweep's own per-request spread instead.
"""

from __future__ import annotations

from typing import Any

from console.analysis.noise_profile import Z95
from console.analysis.noise_profile import NoiseProfile as Calibration
from console.analysis.typed_noise import FigureNoise, NoiseProfile


def from_calibration(calibration: Calibration) -> NoiseProfile:
    """A calibration as typed-figure noise: one point per calibrated point."""
    source = f"calibration of {calibration.host}"
    drift = Z95 * calibration.drift_sd  # widened: a few shifts measure it badly
    points = tuple(
        FigureNoise(p.rel_sd, max(1, p.n - 1), p.text_type, float(p.context), source, drift, p.n)
        for p in calibration.points
        if p.n >= 2
    )
    return NoiseProfile(points, source, drift)


async def calibration_profile(store: Any, host: str, flags_hash: str) -> NoiseProfile | None:
    """The host's calibrated noise profile for these flags, or None when there is none."""
    if store is None:
        return None
    calibration = await store.noise_profile(host, flags_hash)
    if calibration is None:
        return None
    profile = from_calibration(calibration)
    return profile if profile.points else None
