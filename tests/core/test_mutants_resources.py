"""Tests that kill the survivors of bench/mutation.py on cltr/core/resources.py."""

import os

import pytest

from cltr.core.resources import describe_bytes, physical_memory


@pytest.mark.parametrize(
    "pages, size, expected",
    [(1, 1, 1), (3, 4096, 3 * 4096), (0, 4096, None), (-1, 4096, None), (4096, 0, None), (4096, -1, None)],
)
def test_physical_memory_is_unknown_unless_both_counts_are_positive(monkeypatch, pages, size, expected):
    # kills `pages > 0 and size > 0` -> `or`, `>=` for either `>`, and `> 1` for either `> 0`:
    # sysconf answers -1 (or 0) for a count the system does not know
    answers = {"SC_PHYS_PAGES": pages, "SC_PAGE_SIZE": size}
    monkeypatch.setattr(os, "sysconf", lambda name: answers[name])
    assert physical_memory() == expected


def test_exactly_1024_bytes_is_one_kib():
    # kills `value < 1024` -> `<=` and -> `< 1025`: 1024 of a unit is one of the next
    assert describe_bytes(1024) == "1 KiB"
    assert describe_bytes(1023) == "1023 B"
    assert describe_bytes(1024**2) == "1 MiB"
