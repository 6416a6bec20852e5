"""The sampling a service's traffic uses, and every console measurement runs at.

A host profile names it (`[sampling]` in its TOML; greedy, temperature 0, by default) and
the measuring commands' `--temperature`, `--top-p`, `--top-k` and `--seed` override it
for one run. Acceptance falls with temperature, so a draft window tuned on greedy figures
is tuned for traffic that does not exist: every figure says which sampling it was taken
at (`label`), every stored run keeps it, and two runs at different sampling are never
compared without saying so (`comparable`).

Seeds. At temperature > 0 a request's tokens are a random draw; the engine makes them a
deterministic one given a seed. Each request sends a seed derived from the profile's base
`seed`, its passage (prompt id) and which read of that passage it is in the run
(`request_seed`), so the k-th read of a passage gets the same seed on both arms of a
comparison (paired by passage and seed) while the repeats of one passage still sample
differently (a repeat that drew the same tokens again would understate the spread of
commit). `seed_policy = "unseeded"` sends none: the engine draws its own.

Greedy is one setting whatever its top-p, top-k or seed: the argmax does not depend on
them, so all greedy settings share one label and compare with each other.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from console.errors import ConfigError

GREEDY_BELOW = 1e-6  # SGLang's (and the bundled engine's) greedy threshold
SEED_BITS = 31  # a seed every engine's request field takes (int32 on some)
SeedPolicy = Literal["per-passage", "unseeded"]


class Sampling(BaseModel):
    """Temperature, top-p, top-k and how requests are seeded (see the module doc)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(default=0.0, ge=0, le=100)
    top_p: float = Field(default=1.0, gt=0, le=1)
    top_k: int = Field(default=-1, ge=-1)  # -1 or 0: no limit (SGLang's and vLLM's way)
    seed: int = Field(default=0, ge=0)  # the base every request's seed is derived from
    seed_policy: SeedPolicy = "per-passage"

    @field_validator("temperature")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("temperature must be a finite number")
        return value

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_BELOW

    @property
    def distribution(self) -> str:
        """What the output is drawn from, seed left out ("greedy", "T=1 top-p 0.9"):
        runs at two base seeds sample one distribution, so their figures compare (with
        intervals, not paired by seed)."""
        if self.greedy:
            return "greedy"
        parts = [f"T={self.temperature:g}"]
        if self.top_p < 1:
            parts.append(f"top-p {self.top_p:g}")
        if self.top_k > 0:
            parts.append(f"top-k {self.top_k}")
        return " ".join(parts)

    @property
    def label(self) -> str:
        """How every face names it: "greedy", "T=1 top-p 0.9 seed 7"."""
        if self.greedy:
            return "greedy"
        seeds = "unseeded" if self.seed_policy == "unseeded" else f"seed {self.seed}"
        return f"{self.distribution} {seeds}"

    def request_seed(self, prompt_id: str, read: int) -> int | None:
        """The seed of the `read`-th request (0 first) of passage `prompt_id` in a run;
        None when greedy (nothing to seed) or unseeded."""
        if self.greedy or self.seed_policy == "unseeded":
            return None
        digest = hashlib.sha256(f"{self.seed}:{prompt_id}:{read}".encode()).digest()
        return int.from_bytes(digest[:8], "big") % 2**SEED_BITS

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump()

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Sampling:
        """A stored run's sampling; a run stored before sampling was recorded was greedy."""
        return cls.model_validate(data) if data else GREEDY

    def overridden(self, **values: Any) -> Sampling:
        """These settings with the options a command was given (None: not given), checked
        as a profile is: a bad value is refused in one sentence before anything is sent."""
        given = {k: v for k, v in values.items() if v is not None}
        if not given:
            return self
        try:
            return Sampling.model_validate({**self.as_dict(), **given})
        except ValidationError as exc:
            first = exc.errors()[0]
            key = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"Sampling {key}: {first['msg']}.") from None


GREEDY = Sampling()

# A typed field -> its Sampling field and how its text reads (the TUI's sampling dialog;
# the CLI's argparse types are the same two).
TYPED_FIELDS = {"temperature": float, "top_p": float, "top_k": int, "seed": int}


def from_typed(current: Sampling, **texts: str) -> Sampling:
    """`current` with the typed fields over it (blank: keep `current`'s), each checked as
    the command-line options are: a word that is no number, or a value out of range, is
    refused in one sentence and `current` stands."""
    values: dict[str, Any] = {}
    for name, text in texts.items():
        kind = TYPED_FIELDS[name]
        text = text.strip()
        if not text:
            continue
        try:
            values[name] = kind(text)
        except ValueError:
            noun = "a whole number" if kind is int else "a number"
            raise ConfigError(f"Sampling {name}: {text!r} is not {noun}.") from None
    return current.overridden(**values)


def comparable(a: Sampling, b: Sampling) -> bool:
    """Whether figures taken at `a` and at `b` describe the same traffic."""
    return a.distribution == b.distribution


def mixed_sampling_sentence(a: Sampling, b: Sampling) -> str:
    """The one sentence a comparison across two sampling settings says."""
    return (
        f"These runs were measured at different sampling ({a.label} against {b.label}): "
        "acceptance depends on it, so the figures describe different traffic; measure "
        "both at one setting, or pass --mixed-sampling to compare them anyway."
    )
