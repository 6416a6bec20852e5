"""Incremental detokenization with stop strings.

Text is produced token by token with vLLM's two-offset method, so a multi-byte character
split across byte-level tokens is held back until it is complete (no U+FFFD in a stream),
and the concatenation of streamed deltas equals the final text exactly. Stop strings are
checked per token (like SGLang), so the token that completes a stop string is the last one
kept; the text is cut before the stop string. While streaming, a suffix that could still
grow into a stop string is withheld (`partial_tag_len`, which the chat parsers use for
their tags too).
"""

from __future__ import annotations


def partial_tag_len(text: str, tag: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `tag`.

    A stream holds back that many characters: the next delta may complete the tag (a
    `<think>`, a `<tool_call>`, a stop string), and text already sent cannot be taken back.
    A complete tag is not a proper prefix, so it is never held here; finding it is the
    caller's job.
    """
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


class IncrementalDetokenizer:
    """One request's tokens turned into text as they arrive, cut at the first stop string."""

    def __init__(
        self, tokenizer, stop: list[str] | None = None, *, skip_special_tokens: bool = True
    ):
        self.tokenizer = tokenizer
        self.skip_special_tokens = skip_special_tokens
        self.stop = [s for s in (stop or []) if s]
        self.max_stop = max((len(s) for s in self.stop), default=0)
        self.ids: list[int] = []
        self.prefix_offset = 0
        self.read_offset = 0
        self.text = ""  # text so far (cut at the stop string once matched)
        self.sent = 0  # characters of self.text already handed out by take()
        self.matched: str | None = None

    def add(self, token: int) -> bool:
        """Append one token; True when a stop string has just matched (stop here)."""
        self.ids.append(token)
        decode = self._decode
        prefix = decode(self.ids[self.prefix_offset : self.read_offset])
        new = decode(self.ids[self.prefix_offset :])
        if len(new) > len(prefix) and not new.endswith("\ufffd"):
            before = len(self.text)
            self.text += new[len(prefix) :]
            self.prefix_offset = self.read_offset
            self.read_offset = len(self.ids)
            if self.stop:
                return self._check_stop(max(0, before - self.max_stop + 1))
        return False

    def _decode(self, ids: list[int]) -> str:
        if self.skip_special_tokens:
            return self.tokenizer.decode(ids)  # the default; also for tokenizers without the flag
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def _check_stop(self, search_from: int) -> bool:
        best = None
        for s in self.stop:
            i = self.text.find(s, search_from)
            if i != -1 and (best is None or i < best[0]):
                best = (i, s)
        if best is None:
            return False
        self.text = self.text[: best[0]]
        self.matched = best[1]
        return True

    def flush(self) -> None:
        """At the end: keep any held-back incomplete character as decoded (U+FFFD)."""
        if self.matched is not None:
            return
        prefix = self._decode(self.ids[self.prefix_offset : self.read_offset])
        new = self._decode(self.ids[self.prefix_offset :])
        if len(new) > len(prefix):
            before = len(self.text)
            self.text += new[len(prefix) :]
            self.prefix_offset = self.read_offset = len(self.ids)
            if self.stop:
                self._check_stop(max(0, before - self.max_stop + 1))

    def take(self, final: bool = False) -> str:
        """Text not yet handed out that is safe to stream now."""
        end = len(self.text)
        if not final and self.stop and self.matched is None:
            # A suffix that may still grow into a stop string is withheld.
            end -= max(partial_tag_len(self.text, s) for s in self.stop)
        end = max(end, self.sent)
        delta = self.text[self.sent : end]
        self.sent = end
        return delta
