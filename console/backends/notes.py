"""Curated notes on the flags operators tune, merged into a discovered schema.

`--help` says what a flag is; these notes say what it does to a speculative-decoding
service and which spellings it has had. A note can also fix a type argparse cannot show
(the help never says "int"), and gives a flag a role the validator understands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from console.backends.schema import FlagSchema, FlagSpec, FlagType

Role = Literal[
    "draft_window", "block_size", "context_length", "tree_budget", "model_path",
    "draft_model_path", "port", "host",
]  # fmt: skip


@dataclass(frozen=True)
class CuratedFlag:
    names: tuple[str, ...]  # newest spelling first; older spellings are aliases
    note: str
    type: FlagType | None = None
    role: Role | None = None
    minimum: float | None = None


DRAFT_WINDOW = CuratedFlag(
    ("speculative-draft-window-size", "speculative-dflash-draft-window-size"),
    "Draft KV window: the drafter attends only to the last N target tokens. Bounds draft "
    "cost on long contexts; the verifier is unaffected. Must be >= the block size "
    "(num draft tokens). Unset = full context. Older releases spell it "
    "--speculative-dflash-draft-window-size.",
    type="int",
    role="draft_window",
    minimum=1,
)
NUM_DRAFT_TOKENS = CuratedFlag(
    ("speculative-num-draft-tokens", "speculative-dflash-block-size"),
    "DFlash block size: tokens per verify window including the bonus token. Unset = read "
    "from the draft model's config (fallback 16).",
    type="int",
    role="block_size",
    minimum=1,
)
TREE_BUDGET = CuratedFlag(
    ("speculative-ddtree-budget",),
    "DDTree node budget per verify step. Larger trees raise acceptance length and step "
    "time; the best value depends on context length.",
    type="int",
    role="tree_budget",
    minimum=1,
)
CONTEXT_LENGTH = CuratedFlag(
    ("context-length",),
    "Maximum context (prompt + output) in tokens. Cannot exceed the model's "
    "max_position_embeddings unless the engine is told to override it.",
    type="int",
    role="context_length",
    minimum=1,
)
REASONING_PARSER = CuratedFlag(
    ("reasoning-parser",),
    "Splits <think> reasoning from the answer in chat responses (e.g. qwen3, deepseek-r1).",
)
TOOL_CALL_PARSER = CuratedFlag(
    ("tool-call-parser",),
    "Parses tool calls out of model output for the chat API (e.g. qwen25, hermes).",
)
ATTENTION_BACKEND = CuratedFlag(
    ("attention-backend",),
    "Attention kernels for the target model (e.g. flashinfer, fa3, triton). DDTree ports "
    "usually need triton or flashinfer with page size 1.",
)
DRAFT_ATTENTION_BACKEND = CuratedFlag(
    ("speculative-draft-attention-backend",),
    "Attention kernels for the drafter; unsupported values fall back to flashinfer.",
)
PAGE_SIZE = CuratedFlag(
    ("page-size",),
    "KV cache page size in tokens. DDTree tree verification requires 1.",
    type="int",
    minimum=1,
)
ALGORITHM = CuratedFlag(
    ("speculative-algorithm",),
    "Speculative decoding method: DFLASH (linear block) or DDTREE (draft trees); NONE "
    "decodes autoregressively.",
)
MODEL_PATH = CuratedFlag(("model-path", "model"), "Target model weights.", role="model_path")
DRAFT_MODEL_PATH = CuratedFlag(
    ("speculative-draft-model-path",), "DFlash drafter weights.", role="draft_model_path"
)
PORT = CuratedFlag(("port",), "HTTP port of the server.", type="int", role="port")
HOST = CuratedFlag(("host",), "Address the server listens on.", role="host")
DECODE_LOG_INTERVAL = CuratedFlag(
    ("decode-log-interval",),
    "Decode steps between `Decode batch` log lines; the console's live view reads them.",
    type="int",
    minimum=1,
)

SGLANG_NOTES: tuple[CuratedFlag, ...] = (
    DRAFT_WINDOW, NUM_DRAFT_TOKENS, TREE_BUDGET, CONTEXT_LENGTH, REASONING_PARSER,
    TOOL_CALL_PARSER, ATTENTION_BACKEND, DRAFT_ATTENTION_BACKEND, PAGE_SIZE, ALGORITHM,
    MODEL_PATH, DRAFT_MODEL_PATH, PORT, HOST, DECODE_LOG_INTERVAL,
)  # fmt: skip

VLLM_NOTES: tuple[CuratedFlag, ...] = (
    CuratedFlag(
        ("max-model-len",),
        "Maximum context (prompt + output) in tokens; vLLM's name for the context length.",
        type="int",
        role="context_length",
        minimum=1,
    ),
    CuratedFlag(
        ("speculative-config",),
        'JSON, e.g. {"method": "dflash", "model": "...", "num_speculative_tokens": 15}; '
        "num_speculative_tokens = block size - 1 (for ddtree it is the tree budget).",
        type="json",
    ),
    CuratedFlag(("model",), "Target model weights.", role="model_path"),
    REASONING_PARSER,
    CuratedFlag(
        ("tool-call-parser",),
        "Parses tool calls out of model output; needs --enable-auto-tool-choice.",
    ),
    CuratedFlag(
        ("attention-backend",),
        "Attention kernels; DFlash needs a non-causal-capable backend (e.g. FLASH_ATTN), "
        "DDTree needs TREE_ATTN.",
    ),
    CuratedFlag(("block-size",), "KV cache block (page) size in tokens.", type="int", minimum=1),
    PORT,
    HOST,
)


def merge_notes(schema: FlagSchema, notes: tuple[CuratedFlag, ...]) -> dict[Role, str]:
    """Annotate `schema` in place; returns role -> the flag name this engine uses for it.

    Where the engine lists an older spelling only, that spelling stays canonical (it is
    what this installed version accepts) and the newer names become aliases, so a user
    who types the new name still reaches the right flag.
    """
    roles: dict[Role, str] = {}
    for curated in notes:
        present = [n for n in curated.names if n in schema.flags]
        if not present:
            continue
        name = present[0]
        for other in present[1:]:
            schema.fold(other, into=name)
        spec: FlagSpec = schema.flags[name]
        aliases = tuple(dict.fromkeys([*spec.aliases, *(n for n in curated.names if n != name)]))
        schema.replace(
            name,
            note=curated.note,
            tuned=True,
            aliases=aliases,
            type=curated.type or spec.type,
            minimum=curated.minimum,
        )
        if curated.role:
            roles[curated.role] = name
    return roles
