"""Chat prompt template, reasoning parser and tool-call parser.

All of this runs on generated text after the engine produced it, on the HTTP side, so it
never changes decode speed.

Chat template: the bundled model is a tiny base model trained on Python source, with no
chat tokens, so messages are joined as plain text: each message's content, in order,
separated by a blank line; roles are not rendered. A user message like "def fib(n):" is
therefore continued exactly as the completions endpoint would continue it.

Reasoning (`--reasoning-parser`): a `<think>...</think>` span becomes `reasoning_content`.
`deepseek-r1` and `kimi_k2` also treat text before a lone `</think>` as reasoning (those
models open the span in their template); `qwen3` needs the opening tag.

Tool calls (`--tool-call-parser qwen25|hermes`): each
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` becomes one OpenAI tool call;
the text outside the spans stays as content.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from engine.serve.detokenizer import partial_tag_len

THINK_START = "<think>"
THINK_END = "</think>"
TOOL_START = "<tool_call>"
TOOL_END = "</tool_call>"
CHAT_SEPARATOR = "\n\n"


def message_text(content) -> str:
    """The text of a chat message's content: a string or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind != "text" or not isinstance(part.get("text"), str):
            raise ValueError("only text content parts are supported")
        parts.append(part["text"])
    return "".join(parts)


def render_chat(messages: list[dict]) -> str:
    """The plain-text chat template documented above."""
    return CHAT_SEPARATOR.join(message_text(m.get("content")) for m in messages)


def split_reasoning(text: str, parser: str) -> tuple[str | None, str]:
    """(reasoning_content, content) for a finished generation (None: no think span)."""
    p = StreamingReasoningParser(parser)
    reasoning, content = p.feed(text, final=True)
    return (reasoning if p.seen_think else None), content


class StreamingReasoningParser:
    """Splits streamed text deltas into (reasoning, content) deltas, holding back partial tags."""

    def __init__(self, parser: str):
        self.parser = parser
        self.in_think = False
        self.seen_think = False
        self.buffer = ""
        # deepseek-r1 / kimi_k2 may start inside the span without an opening tag; until we see
        # either tag we cannot know, so buffer the text (bounded by the generation anyway).
        self.undecided = parser in ("deepseek-r1", "kimi_k2")

    def feed(self, delta: str, final: bool = False) -> tuple[str, str]:
        self.buffer += delta
        reasoning, content = [], []
        while True:
            if self.undecided:
                s, e = self.buffer.find(THINK_START), self.buffer.find(THINK_END)
                if e != -1 and (s == -1 or e < s):
                    reasoning.append(self.buffer[:e])
                    self.buffer = self.buffer[e + len(THINK_END) :]
                    self.undecided = False
                    self.seen_think = True
                    continue
                if s != -1:
                    self.undecided = False
                    continue
                if final:
                    self.undecided = False
                    continue
                break
            if self.in_think:
                e = self.buffer.find(THINK_END)
                if e != -1:
                    reasoning.append(self.buffer[:e])
                    self.buffer = self.buffer[e + len(THINK_END) :]
                    self.in_think = False
                    continue
                keep = 0 if final else partial_tag_len(self.buffer, THINK_END)
                reasoning.append(self.buffer[: len(self.buffer) - keep])
                self.buffer = self.buffer[len(self.buffer) - keep :]
                break
            s = -1 if self.seen_think else self.buffer.find(THINK_START)
            if s != -1:
                content.append(self.buffer[:s])
                self.buffer = self.buffer[s + len(THINK_START) :]
                self.in_think = True
                self.seen_think = True
                continue
            keep = 0 if (final or self.seen_think) else partial_tag_len(self.buffer, THINK_START)
            content.append(self.buffer[: len(self.buffer) - keep])
            self.buffer = self.buffer[len(self.buffer) - keep :]
            break
        return "".join(reasoning), "".join(content)


@dataclass
class ToolCall:
    name: str
    arguments: str  # JSON text, as OpenAI sends it
    id: str

    def as_openai(self, index: int | None = None) -> dict:
        out = {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }
        if index is not None:
            out["index"] = index
        return out


def parse_tool_calls(text: str) -> tuple[str, list[ToolCall]]:
    """(content outside tool-call spans, tool calls). Spans that are not valid calls stay text."""
    calls: list[ToolCall] = []
    content: list[str] = []
    pos = 0
    while True:
        s = text.find(TOOL_START, pos)
        if s == -1:
            content.append(text[pos:])
            break
        e = text.find(TOOL_END, s)
        if e == -1:
            content.append(text[pos:])
            break
        body = text[s + len(TOOL_START) : e].strip()
        call = _tool_call(body)
        if call is None:
            content.append(text[pos : e + len(TOOL_END)])
        else:
            content.append(text[pos:s])
            calls.append(call)
        pos = e + len(TOOL_END)
    return "".join(content).strip() if calls else "".join(content), calls


def _tool_call(body: str) -> ToolCall | None:
    try:
        obj = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        arguments = args
    else:
        arguments = json.dumps(args, ensure_ascii=False)
    return ToolCall(name=obj["name"], arguments=arguments, id=f"call_{uuid.uuid4().hex[:24]}")
