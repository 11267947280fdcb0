"""The one memory check behind the refusals of issue 21 (``cltr.core.resources``)."""

import os

import pytest

import cltr.core.resources as resources
from cltr.core.resources import describe_bytes, exceeds_memory, physical_memory


def test_physical_memory_is_the_systems_page_count_times_page_size():
    expected = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert physical_memory() == expected > 0


@pytest.mark.parametrize(
    "count, text",
    [(0, "0 B"), (1000, "1000 B"), (1536, "1.5 KiB"), (15.7 * 2**30, "15.7 GiB"), (1024 * 1e8 * 8, "763 GiB")],
)
def test_describe_bytes(count, text):
    assert describe_bytes(count) == text


def test_exceeds_memory_says_both_sizes_only_beyond_the_machines_memory(monkeypatch):
    monkeypatch.setattr(resources, "physical_memory", lambda: 8 << 30)
    assert exceeds_memory(8 << 30) is None
    assert exceeds_memory((8 << 30) + 1) == "about 8 GiB, more than this machine's 8 GiB of memory"
    assert exceeds_memory(763 * 2**30) == "about 763 GiB, more than this machine's 8 GiB of memory"
    monkeypatch.setattr(resources, "physical_memory", lambda: None)  # unknown: never refused
    assert exceeds_memory(1e30) is None
