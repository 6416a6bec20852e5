"""`--temperature`, `--top-p`, `--top-k`, `--seed`: the sampling options of every
measuring command and of `hosts add`.

On a measuring command they override the host profile's `[sampling]` for that run only
(`with_service` applies them before the service opens, so every session of the command,
a baseline's both arms included, measures at the same setting); on `hosts add` they are
written into the new profile. A bad value is refused in one sentence before anything is
sent (`Sampling.overridden`)."""

from __future__ import annotations

import argparse
from typing import Any

from console.config import HostProfile
from console.sampling import Sampling

# option dest -> Sampling field (`sampling_seed`: breakeven and bench verdict have a
# bootstrap `--seed` of their own, so theirs is spelled `--sampling-seed`)
FIELDS = {"temperature": "temperature", "top_p": "top_p", "top_k": "top_k",
          "sampling_seed": "seed"}  # fmt: skip


def add_sampling_options(
    p: argparse.ArgumentParser, *, what: str = "this run", seed_flag: str = "--seed"
) -> None:
    group = p.add_argument_group("sampling (default: the host profile's, greedy if none)")
    group.add_argument(
        "--temperature",
        type=float,
        metavar="T",
        help=f"sampling temperature for {what} (0: greedy)",
    )
    group.add_argument("--top-p", type=float, metavar="P", help="nucleus mass, in (0, 1]")
    group.add_argument(
        "--top-k", type=int, metavar="K", help="keep the K most likely tokens (-1 or 0: no limit)"
    )
    group.add_argument(
        seed_flag, dest="sampling_seed", type=int, metavar="N",
        help="base seed: each request's seed is derived from it, its passage and its repeat",
    )  # fmt: skip


def given_sampling(args: argparse.Namespace) -> dict[str, Any]:
    """The sampling options on this command line (none given: empty)."""
    return {field: getattr(args, dest) for dest, field in FIELDS.items()
            if getattr(args, dest, None) is not None}  # fmt: skip


def with_sampling(profile: HostProfile, args: argparse.Namespace) -> HostProfile:
    """`profile` measuring at its own sampling with this command line's options over it."""
    given = given_sampling(args)
    if not given:
        return profile
    sampling: Sampling = profile.sampling.overridden(**given)
    return profile.model_copy(update={"sampling": sampling})
