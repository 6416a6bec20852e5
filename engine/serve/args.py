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
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import NoReturn

ALGORITHMS = ("NONE", "DFLASH", "DDTREE")
# SGLang algorithm name -> engine.decode.Decoder method.
METHOD_FOR_ALGORITHM = {"NONE": "ar", "DFLASH": "dflash", "DDTREE": "ddtree"}
# Every reasoning parser here reads a `<think>...</think>` span
# (engine/serve/chat_parsing.py); the names are SGLang's so that a unit file written for
# SGLang also starts this server.
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


# Same as engine.checkpoint.DEFAULT_TARGET_PATH / DEFAULT_DRAFTER_PATH, without importing
# torch: `--help` (which the console runs over SSH to read the flag schema) stays fast.
_WEIGHTS = Path(__file__).resolve().parents[1] / "weights"
DEFAULT_TARGET_PATH = _WEIGHTS / "target"
DEFAULT_DRAFTER_PATH = _WEIGHTS / "drafter"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer of at least 1, got {value}")
    return value


def _delay_ms(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected milliseconds, got {text!r}") from None
    if not 0.0 <= value <= 10_000.0:
        raise argparse.ArgumentTypeError(f"expected 0 to 10000 milliseconds, got {value:g}")
    return value


def _slowdown(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction like 0.3, got {text!r}") from None
    if not 0.0 <= value <= 10.0:
        raise argparse.ArgumentTypeError(f"expected a fraction from 0 to 10, got {value:g}")
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
                f"invalid choice {text!r} (choose from {', '.join(choices)})"
            )
        return up

    parse.__name__ = "algorithm"
    return parse


def flag(help: str, **argparse_kwargs) -> Field:
    """A ServeArgs field that is the command-line flag `--field-name`.

    The keyword arguments go to `add_argument` unchanged; the help is one sentence that
    starts with the value type in brackets and ends with `(default: X)` (see above).
    """
    return field(metadata={"flag": {"help": help, **argparse_kwargs}})


@dataclass
class ServeArgs:
    """The effective serve configuration (flags after defaults and deprecations).

    Every `flag(...)` field is one command-line flag, declared here only:
    `build_parser` adds the flags in field order and `check_static` reads them back by
    field name.
    """

    # flag() returns a dataclasses.Field, which ruff cannot see (RUF009).
    model_path: Path = flag(  # noqa: RUF009
        f"[path] Directory of the target model (config.json, *.safetensors, tokenizer.json) "
        f"(default: {DEFAULT_TARGET_PATH})",
        type=Path,
        default=DEFAULT_TARGET_PATH,
    )
    speculative_algorithm: str = flag(
        "[choice] Decoding method: NONE is plain autoregressive, DFLASH verifies one drafted "
        "block, DDTREE verifies a draft tree (default: DDTREE)",
        type=_upper_choice(ALGORITHMS),
        choices=ALGORITHMS,
        default="DDTREE",
    )
    speculative_draft_model_path: Path | None = flag(  # noqa: RUF009
        f"[path] Directory of the DFlash block drafter, unused with NONE "
        f"(default: {DEFAULT_DRAFTER_PATH})",
        type=Path,
        default=None,
    )
    speculative_num_draft_tokens: int | None = flag(
        "[int] Draft block size including the bonus token (default: the drafter's block size)",
        type=_positive_int,
        default=None,
    )
    speculative_ddtree_budget: int | None = flag(
        "[int] DDTree node budget per verify round, excluding the root "
        "(default: the block size minus 1)",
        type=_positive_int,
        default=None,
    )
    speculative_draft_window_size: int | None = flag(
        "[int] Recent target tokens the drafter attends to, at least the block size "
        "(default: the full context)",
        type=_positive_int,
        default=None,
    )
    context_length: int | None = flag(
        "[int] Maximum tokens per request, prompt plus output, at most the model's maximum "
        "(default: the model's max_position_embeddings)",
        type=_positive_int,
        default=None,
    )
    max_running_requests: int = flag(
        "[int] Requests decoded together in one batch, every one's verify in one target "
        "forward; more wait in the queue (1: one at a time) (default: 8)",
        type=_positive_int,
        default=8,
    )
    reasoning_parser: str | None = flag(
        "[choice] Return a <think>...</think> span as reasoning_content in chat responses "
        "(default: None)",
        choices=REASONING_PARSERS,
        default=None,
    )
    tool_call_parser: str | None = flag(
        "[choice] Parse <tool_call>{json}</tool_call> spans into chat tool_calls when the "
        "request has tools (default: None)",
        choices=TOOL_CALL_PARSERS,
        default=None,
    )
    host: str = flag(
        "[str] Address the HTTP server binds to (default: 127.0.0.1)", default="127.0.0.1"
    )
    port: int = flag(
        "[int] TCP port the HTTP server listens on (default: 30000)", type=_port, default=30000
    )
    api_key: str | None = flag(
        "[str] Require `Authorization: Bearer KEY` on every endpoint except /health* and "
        "/metrics (default: None)",
        default=None,
    )
    served_model_name: str = flag(
        "[str] Model name reported by /v1/models and expected in requests "
        "(default: the model path)",
        default=None,
    )
    decode_log_interval: int = flag(
        "[int] Print an SGLang-format `Decode batch` line every this many verify rounds "
        "(default: 40)",
        type=_positive_int,
        default=40,
    )
    device: str = flag(
        "[str] Torch device for both models, such as cpu or cuda:0 (default: cpu)",
        default="cpu",
    )
    dtype: str = flag(
        "[choice] Weight and activation dtype; auto is float32 on CPU and bfloat16 on CUDA "
        "(default: auto)",
        choices=DTYPE_CHOICES,
        default="auto",
    )
    log_level: str = flag(
        "[choice] Lowest level of server log lines to print (default: info)",
        choices=LOG_LEVELS,
        default="info",
    )
    enable_metrics: bool = flag(
        "[flag] Accepted for SGLang compatibility; /metrics is always on (default: False)",
        action="store_true",
    )
    skip_server_warmup: bool = flag(
        "[flag] Skip the one short warmup generation before reporting ready (default: False)",
        action="store_true",
    )
    # Fault injection for `specconsole bench verdict`: a step-time regression whose size is
    # known by construction (the same flags, context and passages otherwise).
    debug_round_delay_ms: float = flag(
        "[float] Debug: sleep this many milliseconds in every verify round, a step-time "
        "regression of known size for benchmarking the console (default: 0)",
        type=_delay_ms,
        default=0.0,
    )
    debug_round_slowdown: float = flag(
        "[float] Debug: sleep this fraction of each verify round's own compute time in the "
        "round, a step-time regression of known relative size (0.3: step time x1.3) for "
        "benchmarking the console (default: 0)",
        type=_slowdown,
        default=0.0,
    )
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


FLAG_FIELDS = [f for f in fields(ServeArgs) if "flag" in f.metadata]


def build_parser(prog: str = "specengine serve") -> argparse.ArgumentParser:
    p = OneLineErrorParser(
        prog=prog,
        description="Serve the DDTree engine over an OpenAI- and SGLang-compatible HTTP API.",
        formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=40, width=100),
    )
    for f in FLAG_FIELDS:
        p.add_argument("--" + f.name.replace("_", "-"), **f.metadata["flag"])
        if f.name == "speculative_draft_window_size":
            # SGLang's older spelling, kept as a hidden deprecated alias as SGLang does.
            p.add_argument(
                DEPRECATED_WINDOW_FLAG,
                dest="deprecated_draft_window_size",
                type=_positive_int,
                default=None,
                help=argparse.SUPPRESS,
            )
    return p


def parse_serve_args(argv: list[str] | None = None) -> ServeArgs:
    """Parse and check flags that need no weights; exits 2 with one sentence on a bad line."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        return check_static(ns)
    except ServeArgsError as e:
        parser.error(str(e))


def check_static(ns: argparse.Namespace) -> ServeArgs:
    """The ServeArgs for a parsed command line: every flag field read from `ns` by name,
    then the checks and adjustments that need no weights."""
    values = {f.name: getattr(ns, f.name) for f in FLAG_FIELDS}
    warnings: list[str] = []
    window = values["speculative_draft_window_size"]
    if ns.deprecated_draft_window_size is not None:
        warnings.append(
            f"{DEPRECATED_WINDOW_FLAG} is deprecated; use --speculative-draft-window-size instead"
        )
        if window is not None and window != ns.deprecated_draft_window_size:
            raise ServeArgsError(
                f"--speculative-draft-window-size ({window}) and {DEPRECATED_WINDOW_FLAG} "
                f"({ns.deprecated_draft_window_size}) disagree; pass only one"
            )
        window = ns.deprecated_draft_window_size
    block = values["speculative_num_draft_tokens"]
    algo = values["speculative_algorithm"]
    draft_path = values["speculative_draft_model_path"]
    if algo == "NONE":
        for flag_name, value in (
            ("--speculative-draft-model-path", draft_path),
            ("--speculative-num-draft-tokens", block),
            ("--speculative-ddtree-budget", values["speculative_ddtree_budget"]),
            ("--speculative-draft-window-size", window),
        ):
            if value is not None:
                warnings.append(f"{flag_name} is ignored with --speculative-algorithm NONE")
        draft_path = block = window = None
        budget = None
    else:
        if draft_path is None:
            draft_path = DEFAULT_DRAFTER_PATH
        budget = values["speculative_ddtree_budget"]
        if algo == "DFLASH" and budget is not None:
            warnings.append(
                "--speculative-ddtree-budget is ignored with --speculative-algorithm DFLASH"
            )
            budget = None
        if block is not None and block < 2:
            raise ServeArgsError(
                "--speculative-num-draft-tokens must be at least 2 for speculative decoding"
            )
        if window is not None and block is not None and window < block:
            raise ServeArgsError(
                f"--speculative-draft-window-size ({window}) must be at least "
                f"--speculative-num-draft-tokens ({block})"
            )
    values.update(
        speculative_draft_model_path=draft_path,
        speculative_num_draft_tokens=block,
        speculative_ddtree_budget=budget,
        speculative_draft_window_size=window,
        served_model_name=values["served_model_name"] or str(values["model_path"]),
    )
    return ServeArgs(**values, warnings=warnings)


def check_against_bundle(args: ServeArgs, *, max_context: int, block_size: int | None) -> None:
    """Fill defaults from the loaded model and check the flags against it (mutates args)."""
    if args.context_length is None:
        args.context_length = max_context
    elif args.context_length > max_context:
        raise ServeArgsError(
            f"--context-length {args.context_length} is above the model's maximum of "
            f"{max_context} tokens"
        )
    if not args.speculative:
        return
    if args.speculative_num_draft_tokens is None:
        if block_size is None:
            raise ServeArgsError(
                "the drafter config has no block size; pass --speculative-num-draft-tokens"
            )
        args.speculative_num_draft_tokens = block_size
    block = args.speculative_num_draft_tokens
    window = args.speculative_draft_window_size
    if window is not None and window < block:
        raise ServeArgsError(
            f"--speculative-draft-window-size ({window}) must be at least the block size "
            f"({block} from the drafter config)"
        )
    if args.speculative_ddtree_budget is None and args.speculative_algorithm == "DDTREE":
        args.speculative_ddtree_budget = block - 1


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one sentence to stderr and exit non-zero."""
    message = message.strip().rstrip(".")
    sys.stderr.write(f"specengine serve: error: {message}.\n")
    sys.stderr.flush()
    raise SystemExit(code)
