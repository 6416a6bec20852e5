"""Text helpers shared by the streaming parts of the server."""

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
