"""Seeds: every random draw comes from a generator derived from the user's seed and the
purpose of the draw, so that stages and repetitions never share or disturb each other's
randomness and any one can be re-run alone (DESIGN.md, "Randomness")."""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["stream"]


def stream(seed: int, *purpose: str | int) -> np.random.Generator:
    """A generator for one purpose (e.g. ``stream(seed, "clicks", "train", rep)``)."""
    words = [p if isinstance(p, int) else zlib.crc32(str(p).encode()) for p in purpose]
    return np.random.default_rng(np.random.SeedSequence(entropy=int(seed), spawn_key=tuple(words)))
