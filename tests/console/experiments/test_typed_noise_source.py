"""A stored calibration reaches typed figures: its spread per point and its drift."""

from __future__ import annotations

import math
from pathlib import Path

from console.analysis.noise_profile import NoiseProfile, PointNoise
from console.experiments.typed_noise_source import calibration_profile
from console.store import RunStore


async def test_a_stored_calibration_is_the_typed_figures_noise(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    assert await calibration_profile(store, "gpu1", "f00d") is None  # none stored yet
    await store.add_noise_profile(NoiseProfile(
        host="gpu1", engine="builtin", flags_hash="f00d",
        points=(PointNoise("code", 256, 0.08, 12), PointNoise("prose", 1792, 0.12, 1)),
        shifts=(0.05, -0.03), restart_s=(20.0,),
    ))  # fmt: skip
    profile = await calibration_profile(store, "gpu1", "f00d")
    assert profile is not None
    # The one-request point has no spread to speak of and is left out.
    (point,) = profile.points
    assert (point.text_type, point.context, point.sigma, point.df) == ("code", 256.0, 0.08, 11)
    # the drift widened for two shifts (Student's t, 2 df, 99%), not their bare RMS
    drift_sd = math.sqrt((0.05**2 + 0.03**2) / 2) * 9.925 / 2.576
    assert math.isclose(point.drift, 1.96 * drift_sd, rel_tol=1e-4) and profile.drift == point.drift
    assert "calibration of gpu1" in point.text()
    assert await calibration_profile(store, "gpu1", "other-flags") is None
