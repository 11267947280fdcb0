"""Will it fit? An estimate of the memory some work needs, held against the machine's before
the work starts (a C grid, a number of passes, a feature index that sizes a dense X).

One helper, so that every refusal reads alike: "... would need about 763 GiB, more than
this machine's 23.4 GiB of memory". The machine's memory is the physical memory
(``os.sysconf``), not what is free now: the check is for sizes that can never fit, typos
like ``--passes 100000`` or a feature index ``100000000:1``, not a forecast of swapping.
"""

from __future__ import annotations

import os

__all__ = ["physical_memory", "describe_bytes", "exceeds_memory"]


def physical_memory() -> int | None:
    """The machine's physical memory in bytes, or None where the system does not say."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * size if pages > 0 and size > 0 else None


def describe_bytes(count: float) -> str:
    """``count`` bytes in binary units, three significant digits: "763 GiB", "15.7 MiB"."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.3g} {unit}" if unit != "B" else f"{int(value)} B"
        value /= 1024
    raise AssertionError("unreachable")


def exceeds_memory(needed: float) -> str | None:
    """None when ``needed`` bytes fit in the machine's memory (or it is unknown); else the
    end of a refusal: "about 763 GiB, more than this machine's 23.4 GiB of memory"."""
    memory = physical_memory()
    if memory is None or needed <= memory:
        return None
    return f"about {describe_bytes(needed)}, more than this machine's {describe_bytes(memory)} of memory"
