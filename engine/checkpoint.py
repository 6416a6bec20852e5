"""Target and drafter checkpoints on disk: HF-layout directories (config.json, *.safetensors,
tokenizer.json), loaded into a ready-to-decode pair or saved from trained modules."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from engine.drafter import DFlashConfig, DFlashDrafter
from engine.model import Qwen3Config, Qwen3ForCausalLM, fuse_for_inference
from engine.tokenizer import Tokenizer, byte_tokenizer

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
DEFAULT_TARGET_PATH = WEIGHTS_DIR / "target"
DEFAULT_DRAFTER_PATH = WEIGHTS_DIR / "drafter"

DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
    "float64": torch.float64,
    "auto": None,
}


class WeightsError(ValueError):
    """A model directory is missing, incomplete or inconsistent (message is one sentence)."""


@dataclass
class EngineBundle:
    target: Qwen3ForCausalLM
    drafter: DFlashDrafter | None
    tokenizer: Tokenizer
    model_path: Path
    draft_model_path: Path | None
    max_context: int
    block_size: int | None


def resolve_dtype(name: str | torch.dtype, device: str) -> torch.dtype:
    if isinstance(name, torch.dtype):
        return name
    if name not in DTYPES:
        raise ValueError(f"unknown dtype {name!r}; expected one of {', '.join(DTYPES)}")
    dt = DTYPES[name]
    if dt is None:  # auto: bf16 where it is fast, fp32 on CPU
        dt = torch.bfloat16 if str(device).startswith("cuda") else torch.float32
    return dt


def shard_files(path: Path) -> list[Path]:
    index = path / "model.safetensors.index.json"
    if index.exists():
        names = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return [path / n for n in names]
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise WeightsError(f"no *.safetensors weights in {path}")
    return files


def load_state(
    path: Path, on_shard: Callable[[int, int], None] | None = None
) -> dict[str, torch.Tensor]:
    files = shard_files(path)
    state: dict[str, torch.Tensor] = {}
    for i, f in enumerate(files, 1):
        if not f.exists():
            raise WeightsError(f"weight shard {f} is missing")
        state.update(load_file(str(f)))
        if on_shard:
            on_shard(i, len(files))
    return state


def _config(path: Path) -> dict:
    if not path.is_dir():
        raise WeightsError(f"model directory {path} does not exist")
    cfg = path / "config.json"
    if not cfg.exists():
        raise WeightsError(f"{path} has no config.json")
    try:
        return json.loads(cfg.read_text())
    except json.JSONDecodeError as e:
        raise WeightsError(f"{cfg} is not valid JSON ({e.msg})") from None


def load_target(
    path: str | Path, *, device="cpu", dtype="float32", on_shard=None
) -> Qwen3ForCausalLM:
    path = Path(path)
    cfg = Qwen3Config.from_dict(_config(path))
    dt = resolve_dtype(dtype, device)
    with torch.device("meta"):
        model = Qwen3ForCausalLM(cfg)
    state = load_state(path, on_shard)
    if cfg.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    missing, unexpected = _check_keys(model, state)
    if cfg.tie_word_embeddings:
        missing = [k for k in missing if k != "lm_head.weight"]
    if missing or unexpected:
        raise WeightsError(
            f"{path} does not match a Qwen3ForCausalLM of its config "
            f"(missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    model.load_state_dict(state, assign=True, strict=False)
    if cfg.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
    model = model.to(device=device, dtype=dt).eval()
    fuse_for_inference(model)
    return model


def load_draft_model(path: str | Path, target: Qwen3ForCausalLM, *, on_shard=None) -> DFlashDrafter:
    path = Path(path)
    cfg = DFlashConfig.from_dict(_config(path))
    if cfg.layers.hidden_size != target.config.hidden_size:
        raise WeightsError(
            f"drafter hidden size {cfg.layers.hidden_size} does not match "
            f"the target's {target.config.hidden_size}"
        )
    bad = [i for i in cfg.target_layer_ids if not 0 <= i < target.config.num_hidden_layers]
    if bad:
        raise WeightsError(f"drafter taps target layers {bad} that the target does not have")
    with torch.device("meta"):
        drafter = DFlashDrafter(cfg, target)
    state = load_state(path, on_shard)
    state = {
        k.removeprefix("model."): v
        for k, v in state.items()
        if not k.startswith(("embed_tokens", "lm_head", "model.embed_tokens"))
    }
    missing, unexpected = _check_keys(drafter, state)
    if missing or unexpected:
        raise WeightsError(
            f"{path} does not match a DFlash drafter of its config "
            f"(missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    drafter.load_state_dict(state, assign=True, strict=False)
    drafter = drafter.to(device=target.device, dtype=target.dtype).eval()
    fuse_for_inference(drafter)
    return drafter


def _check_keys(module: torch.nn.Module, state: dict) -> tuple[list[str], list[str]]:
    want = set(module.state_dict().keys())
    have = set(state)
    return sorted(want - have), sorted(have - want)


def load_bundle(
    model_path=None,
    draft_model_path=None,
    *,
    device="cpu",
    dtype="float32",
    load_drafter: bool = True,
    on_shard=None,
) -> EngineBundle:
    model_path = Path(model_path or DEFAULT_TARGET_PATH)
    if load_drafter and draft_model_path is None:
        draft_model_path = DEFAULT_DRAFTER_PATH
    target = load_target(model_path, device=device, dtype=dtype, on_shard=on_shard)
    drafter = None
    if load_drafter:
        draft_model_path = Path(draft_model_path)
        drafter = load_draft_model(draft_model_path, target, on_shard=on_shard)
    tok_dir = model_path if (model_path / "tokenizer.json").exists() else draft_model_path
    if tok_dir is None or not (Path(tok_dir) / "tokenizer.json").exists():
        raise WeightsError(f"{model_path} has no tokenizer.json")
    return EngineBundle(
        target=target,
        drafter=drafter,
        tokenizer=Tokenizer.from_dir(tok_dir),
        model_path=model_path,
        draft_model_path=draft_model_path if drafter is not None else None,
        max_context=target.config.max_position_embeddings,
        block_size=drafter.block_size if drafter is not None else None,
    )


def save_target(model: Qwen3ForCausalLM, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(model.config.to_dict(), indent=2) + "\n")
    (out / "generation_config.json").write_text(
        json.dumps({"eos_token_id": model.config.eos_token_id, "do_sample": False}, indent=2) + "\n"
    )
    byte_tokenizer().save(out)


def save_drafter(drafter: DFlashDrafter, out: Path, num_target_layers: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in drafter.state_dict().items()}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    cfg = drafter.config.to_dict()
    cfg["num_target_layers"] = num_target_layers
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    byte_tokenizer().save(out)
