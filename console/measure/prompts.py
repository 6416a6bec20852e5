"""The prompt library: texts by type, cut into prompts of an exact length in tokens.

Acceptance depends on the text (the field's own lesson: repetitive padding committed 7.9
tokens a step where analysis text committed 2.9), so every measurement names its text
type and every sweep can run any type. The shipped types are `code`, `prose` and
`repetitive`; `PromptLibrary.extend_from_file` adds more (a `.txt` file becomes one type
named after the file, a `.jsonl` file holds `{"type": ..., "text": ...}` lines).

A prompt of exactly N tokens is a window of the type's token ids: the text is tokenized
once by the engine itself (`/tokenize`) and windows are sliced from the ids, so the
context length is exact on any tokenizer. Repeats use different windows (offset by a
stride), so the spread of a repeated point reflects the text, not just timing noise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from console.errors import ConsoleError

BUILTIN_TYPES = ("code", "prose", "repetitive")


class PromptError(ConsoleError):
    """A prompt file or text type the library cannot use."""


@dataclass(frozen=True)
class PromptText:
    type: str
    text: str
    source: str  # where it came from: "builtin" or a file path


class PromptLibrary:
    def __init__(self, texts: dict[str, PromptText]) -> None:
        self._texts = dict(texts)

    @classmethod
    def builtin(cls) -> PromptLibrary:
        texts = {}
        folder = resources.files("console.measure") / "texts"
        for kind in BUILTIN_TYPES:
            texts[kind] = PromptText(kind, (folder / f"{kind}.txt").read_text(), "builtin")
        return cls(texts)

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(self._texts)

    def text(self, kind: str) -> PromptText:
        try:
            return self._texts[kind]
        except KeyError:
            raise PromptError(
                f"There is no text type {kind!r}; the library has {', '.join(self.types)}."
            ) from None

    def extend_from_file(self, path: str | Path) -> list[str]:
        """Add the texts in `path`; returns the types added or extended."""
        path = Path(path).expanduser()
        try:
            raw = path.read_text()
        except OSError as exc:
            raise PromptError(f"Cannot read prompt file {path}: {exc.strerror}.") from None
        added: dict[str, list[str]] = {}
        if path.suffix == ".jsonl":
            for number, line in enumerate(raw.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    kind, text = str(row["type"]), str(row["text"])
                except (ValueError, KeyError, TypeError):
                    raise PromptError(
                        f"{path} line {number} is not a JSON object with 'type' and 'text'."
                    ) from None
                added.setdefault(kind, []).append(text)
        else:
            if not raw.strip():
                raise PromptError(f"Prompt file {path} is empty.")
            added[path.stem] = [raw]
        for kind, parts in added.items():
            self._texts[kind] = PromptText(kind, "\n\n".join(parts), str(path))
        return list(added)

    def short_prompts(self, kind: str, count: int = 4, chars: int = 320) -> list[tuple[str, str]]:
        """A few (id, text) prompts of about `chars` characters each, for the prompt lab."""
        text = self.text(kind).text
        step = max(chars, len(text) // max(count, 1))
        out = []
        for i in range(count):
            start = i * step
            piece = text[start : start + chars]
            if piece.strip():
                out.append((f"{kind}-{i:02d}", piece))
        return out


# Distinct windows a text gives before `window` repeats one (seven strides, each in seven
# steps): a sweep reads the first few, figures held out from it read the others.
WINDOWS = 49


def window(ids: list[int], length: int, index: int = 0) -> list[int]:
    """The `index`-th window of exactly `length` ids, cycling through the text if short.

    Windows start `len(ids) // 7` ids apart (a stride coprime to small repeat counts), so
    repeats of one point read different passages of the same type; every further seven
    move a seventh of a stride on, so 49 windows start apart before any repeats (a sweep
    reads six passages a point, and figures held out from it read others).
    What a window decodes is the text after its end, so windows that overlap are still
    different passages."""
    if length <= 0:
        raise PromptError(f"A prompt needs at least one token, not {length}.")
    if not ids:
        raise PromptError("The engine tokenized the text to nothing.")
    stride = max(1, len(ids) // 7)
    start = ((index % 7) * stride + (index // 7 % 7) * max(1, stride // 7)) % len(ids)
    out: list[int] = []
    while len(out) < length:
        take = ids[start : start + length - len(out)]
        out.extend(take)
        start = 0
    return out


def repetition_share(tokens: list[int] | str, n: int = 8) -> float | None:
    """Share of the n-grams that already occurred earlier in the sequence (looping output)."""
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    if not grams:
        return None
    seen: set[tuple] = set()
    repeats = 0
    for gram in grams:
        repeats += gram in seen
        seen.add(gram)
    return repeats / len(grams)
