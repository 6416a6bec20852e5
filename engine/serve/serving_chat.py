"""OpenAI's `/v1/chat/completions`: messages rendered with the chat template, reasoning
split off (`--reasoning-parser`) and tool calls parsed (`--tool-call-parser`), as one body
or an SSE stream of deltas."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from engine.serve.chat_parsing import (
    TOOL_START,
    StreamingReasoningParser,
    parse_tool_calls,
    render_chat,
    split_reasoning,
)
from engine.serve.checks import resolve_max_tokens, stop_list
from engine.serve.detokenizer import partial_tag_len
from engine.serve.errors import APIError
from engine.serve.generation import SSE_DONE, sse_aborted
from engine.serve.protocol import ChatCompletionRequest
from engine.serve.serving_openai import (
    OpenAIEndpoint,
    OpenAIGeneration,
    check_openai_request,
    finish_reason,
    matched_stop,
    usage,
    usage_so_far,
)
from engine.serve.state import ServerState
from engine.serve.worker import GenParams, JobResult


@dataclass
class ChatGeneration(OpenAIGeneration):
    reasoning: str | None = None  # the reasoning parser, when reasoning is split off
    tools_on: bool = False  # tool calls are parsed out of the content


class ServingChat(OpenAIEndpoint):
    body_model = ChatCompletionRequest
    id_prefix = "chatcmpl"
    object = "chat.completion"
    chunk_object = "chat.completion.chunk"

    def prepare(self, state: ServerState, body: ChatCompletionRequest) -> ChatGeneration:
        sampling = check_openai_request(state, body)
        check_chat_options(state, body)
        try:
            prompt = render_chat([m.model_dump() for m in body.messages])
        except ValueError as e:
            raise APIError(f"Unsupported message content: {e}.", param="messages") from None
        ids = state.tokenizer.encode(prompt)
        requested, param = body.max_completion_tokens, "max_completion_tokens"
        if requested is None:
            requested, param = body.max_tokens, "max_tokens"
        max_tokens = resolve_max_tokens(state, len(ids), requested, default=None, param=param)
        params = GenParams(
            ids,
            max_tokens,
            ignore_eos=body.ignore_eos,
            stop=stop_list(body.stop),
            stream=body.stream,
            sampling=sampling,
        )
        return self.generation(
            state,
            body,
            params,
            ChatGeneration,
            reasoning=state.args.reasoning_parser if body.separate_reasoning else None,
            tools_on=bool(body.tools and body.tool_choice != "none"),  # a parser is checked above
        )

    def response(self, gen: ChatGeneration, result: JobResult) -> dict:
        text = result.text
        reasoning_content = None
        if gen.reasoning:
            reasoning_content, text = split_reasoning(text, gen.reasoning)
        message: dict[str, Any] = {
            "role": "assistant",
            "content": text,
            "reasoning_content": reasoning_content,
            "tool_calls": None,
        }
        finish = finish_reason(result)
        if gen.tools_on:
            content, calls = parse_tool_calls(text)
            if calls:
                message["content"] = content or None
                message["tool_calls"] = [c.as_openai() for c in calls]
                finish = "tool_calls"
        choice = {
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": finish,
            "matched_stop": matched_stop(result),
        }
        return self.body(gen, choice, result)

    async def stream(self, gen: ChatGeneration) -> AsyncIterator[str]:
        """Chat deltas: the role first, then reasoning and content as they are safe to send
        (see ChatDeltas), then the finish chunk."""
        deltas = ChatDeltas(gen.reasoning, gen.body.stream_reasoning, gen.tools_on)
        yield self._delta_chunk(gen, {"role": "assistant", "content": ""})
        async for event in gen.events():
            final = isinstance(event, JobResult)
            if final and event.finish_reason == "abort":
                yield sse_aborted(event)
                break
            reasoning, content = deltas.feed("" if final else event.text, final=final)
            for piece in reasoning:
                yield self._delta_chunk(gen, {"reasoning_content": piece})
            if content:
                u = usage_so_far(gen, event) if gen.continuous_usage and not final else None
                yield self._delta_chunk(gen, {"content": content}, usage_obj=u)
            if final:
                for chunk in self._ending(gen, deltas, event):
                    yield chunk
        yield SSE_DONE

    def _ending(self, gen: ChatGeneration, deltas: ChatDeltas, result: JobResult) -> list[str]:
        """The chunks after the last delta: held-back content and tool calls, the finish
        reason, and the usage-only chunk when asked."""
        chunks = []
        finish = finish_reason(result)
        content, calls = deltas.tool_calls()
        if content:
            chunks.append(self._delta_chunk(gen, {"content": content}))
        if calls:
            tool_calls = [c.as_openai(i) for i, c in enumerate(calls)]
            chunks.append(self._delta_chunk(gen, {"tool_calls": tool_calls}))
            finish = "tool_calls"
        extra = {"matched_stop": matched_stop(result)}
        if gen.body.return_meta_info:
            extra["meta_info"] = gen.meta_info(result)
        last_usage = usage(result) if gen.continuous_usage else None
        chunks.append(self._delta_chunk(gen, {}, finish, extra, last_usage))
        if gen.include_usage:
            chunks.append(self.usage_chunk(gen, result))
        return chunks

    def _delta_chunk(
        self, gen: ChatGeneration, delta: dict, finish=None, extra=None, usage_obj=None
    ) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        if extra:
            choice.update(extra)
        return self.chunk(gen, [choice], usage_obj)


class ChatDeltas:
    """Splits a chat stream's text into the reasoning and content it may send now.

    Reasoning is split off as it streams (or held whole to the end when stream_reasoning is
    false). With tools on, content from the first `<tool_call>` on is held back until the
    end, when it is parsed into tool_calls; a tag split across deltas is held too, so it
    never leaks as content.
    """

    def __init__(self, reasoning: str | None, stream_reasoning: bool, tools_on: bool):
        self.parser = StreamingReasoningParser(reasoning) if reasoning else None
        self.stream_reasoning = stream_reasoning
        self.tools_on = tools_on
        self.reasoning_held = ""  # all reasoning, when stream_reasoning is false
        self.held = ""  # content withheld because it may be a tool call
        self.holding = False  # a tool call has started: everything from here is held

    def feed(self, text: str, *, final: bool) -> tuple[list[str], str]:
        """The reasoning pieces and the content to send for `text` (at the end: "")."""
        r_delta, c_delta = self.parser.feed(text, final=final) if self.parser else ("", text)
        reasoning = []
        if r_delta and not self.stream_reasoning:
            self.reasoning_held += r_delta
        elif r_delta:
            reasoning.append(r_delta)
        if final and self.reasoning_held:
            reasoning.append(self.reasoning_held)
        if self.tools_on:
            c_delta = self._hold_tool_calls(c_delta, final)
        return reasoning, c_delta

    def _hold_tool_calls(self, content: str, final: bool) -> str:
        """The part of the content that cannot be (the start of) a tool call."""
        self.held += content
        if self.holding:
            return ""
        at = self.held.find(TOOL_START)
        if at != -1:
            out, self.held, self.holding = self.held[:at], self.held[at:], True
            return out
        if final:
            return ""  # what is held is parsed by tool_calls()
        keep = len(self.held) - partial_tag_len(self.held, TOOL_START)
        out, self.held = self.held[:keep], self.held[keep:]
        return out

    def tool_calls(self) -> tuple[str, list]:
        """At the end: the held-back content parsed into (content, tool calls)."""
        if not (self.tools_on and self.held):
            return "", []
        return parse_tool_calls(self.held)


def check_chat_options(state: ServerState, req: ChatCompletionRequest) -> None:
    """The chat-only fields that cannot be honoured here are refused, not dropped."""
    if req.top_logprobs:
        raise APIError(
            "top_logprobs is not supported by this engine; omit it.",
            param="top_logprobs",
            code="unsupported_parameter",
        )
    if not req.tools or req.tool_choice == "none":
        return
    if not state.args.tool_call_parser:
        raise APIError(
            "tools need a server started with --tool-call-parser; without one "
            "tool calls are not parsed, so omit tools or set tool_choice 'none'.",
            param="tools",
            code="unsupported_parameter",
        )
    if req.tool_choice not in (None, "auto"):
        raise APIError(
            "Only tool_choice 'auto' or 'none' is supported: this engine cannot force a tool call.",
            param="tool_choice",
            code="unsupported_parameter",
        )
