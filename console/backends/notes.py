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
    ("speculative-num-draft-tokens",),
    "DFlash block size: tokens per verify window including the bonus token. Unset = read "
    "from the draft model's config (fallback 16).",
    type="int",
    role="block_size",
    minimum=1,
)
DFLASH_BLOCK_SIZE = CuratedFlag(
    ("speculative-dflash-block-size",),
    "DFlash block size under its DFlash-only name; must equal --speculative-num-draft-tokens "
    "when both are given, so set one of them.",
    type="int",
    minimum=1,
)
CUDA_GRAPH_MAX_BS = CuratedFlag(
    ("cuda-graph-max-bs-decode", "cuda-graph-max-bs"),
    "Largest decode batch captured in a CUDA graph; bigger batches run eagerly. Older "
    "releases had one --cuda-graph-max-bs for decode and prefill (the prefill limit is now "
    "--cuda-graph-max-bs-prefill).",
    type="int",
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
    "Speculative decoding method, e.g. DFLASH (one drafted block verified per step); the "
    "engine's own help lists what this version has.",
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
    DRAFT_WINDOW, NUM_DRAFT_TOKENS, DFLASH_BLOCK_SIZE, TREE_BUDGET, CONTEXT_LENGTH,
    REASONING_PARSER, TOOL_CALL_PARSER, ATTENTION_BACKEND, DRAFT_ATTENTION_BACKEND, PAGE_SIZE,
    ALGORITHM, MODEL_PATH, DRAFT_MODEL_PATH, PORT, HOST, DECODE_LOG_INTERVAL, CUDA_GRAPH_MAX_BS,
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
        "num_speculative_tokens = DFlash block size - 1.",
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
        "Attention kernels; DFlash needs a backend that runs non-causal drafts (e.g. FLASH_ATTN).",
    ),
    CuratedFlag(("block-size",), "KV cache block (page) size in tokens.", type="int", minimum=1),
    CuratedFlag(
        ("enable-prefix-caching",),
        "Reuse the KV cache of shared prompt prefixes; off (--disable-prefix-caching) makes "
        "every request prefill in full, which is what a clean step-time measurement wants.",
    ),
    PORT,
    HOST,
)


def merge_notes(schema: FlagSchema, notes: tuple[CuratedFlag, ...]) -> dict[Role, str]:
    """Annotate `schema` in place; returns role -> the flag name this engine uses for it.

    A note only annotates a flag the engine has: nothing is added that this version
    lacks. Where the engine lists an older spelling only, that spelling stays canonical
    (it is what this installed version accepts) and the newer names become aliases. Where
    it has the newest spelling, older ones are renames: a value stored under one (in a
    profile, say) is launched under the new name, with a notice (`canonical_flags`).
    A curated type only fills in for a schema from help text; the engine's own parser
    knows its types better than a note.
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
        position = curated.names.index(name)
        newer = curated.names[:position]
        older = curated.names[position + 1 :]
        aliases = tuple(dict.fromkeys([*spec.aliases, *newer]))
        from_parser = schema.source_kind == "parser"
        schema.replace(
            name,
            note=curated.note,
            tuned=True,
            aliases=aliases,
            type=spec.type if from_parser else curated.type or spec.type,
            minimum=curated.minimum,
        )
        for old in older:
            known = schema.resolve(old)
            if known is None or known.name == name:
                schema.rename(old, into=name)
        if curated.role:
            roles[curated.role] = name
    return roles
