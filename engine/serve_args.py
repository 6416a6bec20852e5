"""`specengine serve` flags: SGLang names, argparse's standard help, one-sentence errors.

The console builds its flag schema by parsing `specengine serve --help`, so every flag's help
is one sentence that starts with its value type in brackets and ends with `(default: X)`,
and every flag has an argparse metavar (`--port PORT`) or a `{A,B}` choice list.
Checks that need no weights run here (`check_static`); the ones that need the model's
config (context length, block size) run after loading (`check_against_bundle`).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

ALGORITHMS = ("NONE", "DFLASH", "DDTREE")
# SGLang algorithm name -> engine.decode.Decoder method.
METHOD_FOR_ALGORITHM = {"NONE": "ar", "DFLASH": "dflash", "DDTREE": "ddtree"}
# Every reasoning parser here reads a `<think>...</think>` span (engine/parsers.py); the
# names are SGLang's so that a unit file written for SGLang also starts this server.
REASONING_PARSERS = ("deepseek-r1", "qwen3", "kimi_k2")
# Both read Qwen2.5/Hermes-style `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.
TOOL_CALL_PARSERS = ("qwen25", "hermes")
DTYPE_CHOICES = ("auto", "float32", "bfloat16", "float16")
LOG_LEVELS = ("debug", "info", "warning", "error")
DEPRECATED_WINDOW_FLAG = "--speculative-dflash-draft-window-size"


class ServeArgsError(ValueError):
    """An invalid flag or flag combination; the message is one sentence for stderr."""


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse that reports a bad command line as one sentence (no usage block)."""

    def error(self, message: str) -> NoReturn:
        message = message.rstrip(".")
        self.exit(2, f"{self.prog}: error: {message}.\n")


def _default_paths() -> tuple[Path, Path]:
    # Same as engine.checkpoint.DEFAULT_TARGET_PATH / DEFAULT_DRAFTER_PATH, without importing
    # torch: `--help` (which the console runs over SSH to read the flag schema) stays fast.
    weights = Path(__file__).resolve().parent / "weights"
    return weights / "target", weights / "drafter"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer of at least 1, got {value}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port between 1 and 65535, got {value}")
    return value


def _upper_choice(choices: tuple[str, ...]):
    def parse(text: str) -> str:
        # SGLang accepts the algorithm in any case (`dflash`); so do we.
        up = text.upper()
        if up not in choices:
            raise argparse.ArgumentTypeError(
                f"invalid choice {text!r} (choose from {', '.join(choices)})")
        return up
    parse.__name__ = "algorithm"
    return parse


def build_parser(prog: str = "specengine serve") -> argparse.ArgumentParser:
    target, drafter = _default_paths()
    p = OneLineErrorParser(
        prog=prog,
        description="Serve the DDTree engine over an OpenAI- and SGLang-compatible HTTP API.",
        formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=40, width=100),
    )
    a = p.add_argument
    a("--model-path", type=Path, default=target,
      help=f"[path] Directory of the target model (config.json, *.safetensors, tokenizer.json) "
           f"(default: {target})")
    a("--speculative-algorithm", type=_upper_choice(ALGORITHMS), choices=ALGORITHMS,
      default="DDTREE",
      help="[choice] Decoding method: NONE is plain autoregressive, DFLASH verifies one drafted "
           "block, DDTREE verifies a draft tree (default: DDTREE)")
    a("--speculative-draft-model-path", type=Path, default=None,
      help=f"[path] Directory of the DFlash block drafter, unused with NONE (default: {drafter})")
    a("--speculative-num-draft-tokens", type=_positive_int, default=None,
      help="[int] Draft block size including the bonus token (default: the drafter's block size)")
    a("--speculative-ddtree-budget", type=_positive_int, default=None,
      help="[int] DDTree node budget per verify round, excluding the root "
           "(default: the block size minus 1)")
    a("--speculative-draft-window-size", type=_positive_int, default=None,
      help="[int] Recent target tokens the drafter attends to, at least the block size "
           "(default: the full context)")
    # SGLang's older spelling, kept as a hidden deprecated alias as SGLang does.
    a(DEPRECATED_WINDOW_FLAG, dest="deprecated_draft_window_size", type=_positive_int,
      default=None, help=argparse.SUPPRESS)
    a("--context-length", type=_positive_int, default=None,
      help="[int] Maximum tokens per request, prompt plus output, at most the model's maximum "
           "(default: the model's max_position_embeddings)")
    a("--reasoning-parser", choices=REASONING_PARSERS, default=None,
      help="[choice] Return a <think>...</think> span as reasoning_content in chat responses "
           "(default: None)")
    a("--tool-call-parser", choices=TOOL_CALL_PARSERS, default=None,
      help="[choice] Parse <tool_call>{json}</tool_call> spans into chat tool_calls when the "
           "request has tools (default: None)")
    a("--host", default="127.0.0.1",
      help="[str] Address the HTTP server binds to (default: 127.0.0.1)")
    a("--port", type=_port, default=30000,
      help="[int] TCP port the HTTP server listens on (default: 30000)")
    a("--api-key", default=None,
      help="[str] Require `Authorization: Bearer KEY` on every endpoint except /health* and "
           "/metrics (default: None)")
    a("--served-model-name", default=None,
      help="[str] Model name reported by /v1/models and expected in requests "
           "(default: the model path)")
    a("--decode-log-interval", type=_positive_int, default=40,
      help="[int] Print an SGLang-format `Decode batch` line every this many verify rounds "
           "(default: 40)")
    a("--device", default="cpu",
      help="[str] Torch device for both models, such as cpu or cuda:0 (default: cpu)")
    a("--dtype", choices=DTYPE_CHOICES, default="auto",
      help="[choice] Weight and activation dtype; auto is float32 on CPU and bfloat16 on CUDA "
           "(default: auto)")
    a("--log-level", choices=LOG_LEVELS, default="info",
      help="[choice] Lowest level of server log lines to print (default: info)")
    a("--enable-metrics", action="store_true",
      help="[flag] Accepted for SGLang compatibility; /metrics is always on (default: False)")
    a("--skip-server-warmup", action="store_true",
      help="[flag] Skip the one short warmup generation before reporting ready "
           "(default: False)")
    return p


@dataclass
class ServeArgs:
    """The effective serve configuration (flags after defaults and deprecations)."""

    model_path: Path
    speculative_algorithm: str
    speculative_draft_model_path: Path | None
    speculative_num_draft_tokens: int | None
    speculative_ddtree_budget: int | None
    speculative_draft_window_size: int | None
    context_length: int | None
    reasoning_parser: str | None
    tool_call_parser: str | None
    host: str
    port: int
    api_key: str | None
    served_model_name: str
    decode_log_interval: int
    device: str
    dtype: str
    log_level: str
    enable_metrics: bool
    skip_server_warmup: bool
    warnings: list[str] = field(default_factory=list)

    @property
    def method(self) -> str:
        return METHOD_FOR_ALGORITHM[self.speculative_algorithm]

    @property
    def speculative(self) -> bool:
        return self.speculative_algorithm != "NONE"

    def public_dict(self) -> dict:
        """Every effective flag in snake_case, JSON-ready (the API key is masked)."""
        out = {}
        for name in self.__dataclass_fields__:
            if name == "warnings":
                continue
            value = getattr(self, name)
            if isinstance(value, Path):
                value = str(value)
            if name == "api_key" and value is not None:
                value = "***"
            out[name] = value
        return out


def parse_serve_args(argv: list[str] | None = None) -> ServeArgs:
    """Parse and check flags that need no weights; exits 2 with one sentence on a bad line."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        return check_static(ns)
    except ServeArgsError as e:
        parser.error(str(e))


def check_static(ns: argparse.Namespace) -> ServeArgs:
    warnings: list[str] = []
    window = ns.speculative_draft_window_size
    if ns.deprecated_draft_window_size is not None:
        warnings.append(f"{DEPRECATED_WINDOW_FLAG} is deprecated; use "
                        f"--speculative-draft-window-size instead")
        if window is not None and window != ns.deprecated_draft_window_size:
            raise ServeArgsError(
                f"--speculative-draft-window-size ({window}) and {DEPRECATED_WINDOW_FLAG} "
                f"({ns.deprecated_draft_window_size}) disagree; pass only one")
        window = ns.deprecated_draft_window_size
    block = ns.speculative_num_draft_tokens
    algo = ns.speculative_algorithm
    draft_path = ns.speculative_draft_model_path
    if algo == "NONE":
        for flag, value in (("--speculative-draft-model-path", draft_path),
                            ("--speculative-num-draft-tokens", block),
                            ("--speculative-ddtree-budget", ns.speculative_ddtree_budget),
                            ("--speculative-draft-window-size", window)):
            if value is not None:
                warnings.append(f"{flag} is ignored with --speculative-algorithm NONE")
        draft_path = block = window = None
        budget = None
    else:
        if draft_path is None:
            draft_path = _default_paths()[1]
        budget = ns.speculative_ddtree_budget
        if algo == "DFLASH" and budget is not None:
            warnings.append("--speculative-ddtree-budget is ignored with "
                            "--speculative-algorithm DFLASH")
            budget = None
        if block is not None and block < 2:
            raise ServeArgsError("--speculative-num-draft-tokens must be at least 2 for "
                                 "speculative decoding")
        if window is not None and block is not None and window < block:
            raise ServeArgsError(
                f"--speculative-draft-window-size ({window}) must be at least "
                f"--speculative-num-draft-tokens ({block})")
    return ServeArgs(
        model_path=ns.model_path,
        speculative_algorithm=algo,
        speculative_draft_model_path=draft_path,
        speculative_num_draft_tokens=block,
        speculative_ddtree_budget=budget,
        speculative_draft_window_size=window,
        context_length=ns.context_length,
        reasoning_parser=ns.reasoning_parser,
        tool_call_parser=ns.tool_call_parser,
        host=ns.host,
        port=ns.port,
        api_key=ns.api_key,
        served_model_name=ns.served_model_name or str(ns.model_path),
        decode_log_interval=ns.decode_log_interval,
        device=ns.device,
        dtype=ns.dtype,
        log_level=ns.log_level,
        enable_metrics=ns.enable_metrics,
        skip_server_warmup=ns.skip_server_warmup,
        warnings=warnings,
    )


def check_against_bundle(args: ServeArgs, *, max_context: int, block_size: int | None) -> None:
    """Fill defaults from the loaded model and check the flags against it (mutates args)."""
    if args.context_length is None:
        args.context_length = max_context
    elif args.context_length > max_context:
        raise ServeArgsError(
            f"--context-length {args.context_length} is above the model's maximum of "
            f"{max_context} tokens")
    if not args.speculative:
        return
    if args.speculative_num_draft_tokens is None:
        if block_size is None:
            raise ServeArgsError("the drafter config has no block size; pass "
                                 "--speculative-num-draft-tokens")
        args.speculative_num_draft_tokens = block_size
    block = args.speculative_num_draft_tokens
    window = args.speculative_draft_window_size
    if window is not None and window < block:
        raise ServeArgsError(
            f"--speculative-draft-window-size ({window}) must be at least the block size "
            f"({block} from the drafter config)")
    if args.speculative_ddtree_budget is None and args.speculative_algorithm == "DDTREE":
        args.speculative_ddtree_budget = block - 1


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one sentence to stderr and exit non-zero."""
    message = message.strip().rstrip(".")
    sys.stderr.write(f"specengine serve: error: {message}.\n")
    sys.stderr.flush()
    raise SystemExit(code)
