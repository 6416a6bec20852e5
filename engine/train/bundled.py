"""The shape of the bundled target and drafter that `specengine train` produces."""

from __future__ import annotations

from engine.drafter import DFlashConfig
from engine.model import Qwen3Config
from engine.tiny import tiny_configs

# The bundled pair. Sized so that the target trains in ~20 minutes on 2 CPU cores and a
# single-token forward is still cheap enough that the drafter's saving is visible.
TARGET_SHAPE = dict(hidden=256, layers=4, heads=4, kv_heads=2, inter=768, max_pos=2048)
# DFlash taps transformers' hidden_states[l + 1] of layers spread through the target and
# never its last layer (whose tap is the final-normed output): for this 4-layer target,
# layers 1 and 2. Set explicitly: DFlash's spacing formula repeats ids below 5 layers.
DRAFTER_SHAPE = dict(draft_layers=1, block_size=16, target_layer_ids=[1, 2])


def bundled_configs() -> tuple[Qwen3Config, DFlashConfig]:
    return tiny_configs(**TARGET_SHAPE, **DRAFTER_SHAPE, tie=True, rope_theta=10000.0)
