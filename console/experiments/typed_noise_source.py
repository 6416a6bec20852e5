"""Where a typed figure's noise comes from when a calibration is stored.

HOOK for the calibration work (`specconsole calibrate HOST`): it measures this host's
request-to-request spread and its block-to-block drift once per host and flags and keeps
the profile in the history store. `calibration_profile` is the one place the verdict
reads it: it asks the store for `noise_profile(host, flags_hash)` (a coroutine returning
`None` or a dict in `NoiseProfile.from_dict`'s shape) and returns None while the store
has no such method or no profile, in which case typed figures carry the stored sweep's
own per-request spread instead (`analysis/typed_noise.py`).
"""

from __future__ import annotations

from typing import Any

from console.analysis.typed_noise import NoiseProfile


async def calibration_profile(store: Any, host: str, flags_hash: str) -> NoiseProfile | None:
    """The host's calibrated noise profile for these flags, or None when there is none."""
    reader = getattr(store, "noise_profile", None) if store is not None else None
    if reader is None:
        return None
    data = await reader(host, flags_hash)
    if not data:
        return None
    profile = NoiseProfile.from_dict(dict(data))
    return profile if profile.points else None
