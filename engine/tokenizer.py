"""Byte-level tokenizer stored as a standard `tokenizer.json`.

Why byte-level: the bundled target is tiny and trained on 2 CPU cores, so a 256-symbol
alphabet keeps the LM head (and with it every verify step) cheap, needs no tokenizer
training, and never produces an unknown token. It is stored as a BPE model with no merges
and a ByteLevel pre-tokenizer, so `tokenizers` and transformers load it unchanged; token id
b is byte b. Real checkpoints bring their own tokenizer.json, which loads the same way.
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, pre_tokenizers

EOS_TOKEN = "<|endoftext|>"
MASK_TOKEN = "<|mask|>"
SPECIAL_TOKENS = [EOS_TOKEN, MASK_TOKEN, "<|im_start|>", "<|im_end|>"]
BYTE_VOCAB_SIZE = 256


def build_byte_tokenizer() -> HFTokenizer:
    """A tokenizer whose ids 0..255 are the bytes and 256.. are SPECIAL_TOKENS."""
    byte_chars = pre_tokenizers.ByteLevel.alphabet()
    # ByteLevel maps each byte to one printable unicode character (GPT-2's table);
    # order the vocab so that id == byte value.
    table = _byte_to_unicode()
    vocab = {table[b]: b for b in range(BYTE_VOCAB_SIZE)}
    assert set(vocab) == set(byte_chars)
    tok = HFTokenizer(models.BPE(vocab=vocab, merges=[], fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIAL_TOKENS)
    return tok


def _byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character table (as used by ByteLevel)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    bs += list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


class Tokenizer:
    """Thin wrapper over a `tokenizer.json` with the few things the engine needs."""

    def __init__(self, hf: HFTokenizer, eos_token_id: int, mask_token_id: int | None = None):
        self.hf = hf
        self.eos_token_id = eos_token_id
        self.mask_token_id = mask_token_id
        self.vocab_size = hf.get_vocab_size(with_added_tokens=True)

    @classmethod
    def from_dir(cls, path: str | Path) -> Tokenizer:
        path = Path(path)
        hf = HFTokenizer.from_file(str(path / "tokenizer.json"))
        eos = hf.token_to_id(EOS_TOKEN)
        cfg_path = path / "tokenizer_config.json"
        if cfg_path.exists():
            cfg = json.loads(cfg_path.read_text())
            name = cfg.get("eos_token")
            if isinstance(name, dict):
                name = name.get("content")
            if name and hf.token_to_id(name) is not None:
                eos = hf.token_to_id(name)
        if eos is None:
            raise ValueError(f"{path}/tokenizer.json has no end-of-text token")
        return cls(hf, eos, hf.token_to_id(MASK_TOKEN))

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        return self.hf.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: list[int], *, skip_special_tokens: bool = True) -> str:
        return self.hf.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.hf.save(str(path / "tokenizer.json"))
        cfg = {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "eos_token": EOS_TOKEN,
            "pad_token": EOS_TOKEN,
            "mask_token": MASK_TOKEN,
            "model_max_length": 1 << 20,
        }
        (path / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def byte_tokenizer() -> Tokenizer:
    hf = build_byte_tokenizer()
    return Tokenizer(hf, hf.token_to_id(EOS_TOKEN), hf.token_to_id(MASK_TOKEN))
