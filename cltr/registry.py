"""Plug-in discovery: every module of a package that defines a given attribute."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from types import ModuleType
from typing import TypeVar

__all__ = ["discover"]

T = TypeVar("T")


def discover(package: str, path: Iterable[str], attribute: str, kind: type[T]) -> list[tuple[ModuleType, T]]:
    """``(module, value)`` for every module of ``package`` (found on ``path``) whose
    ``attribute`` is an instance of ``kind``, in module-name order."""
    found = []
    for info in sorted(pkgutil.iter_modules(list(path)), key=lambda info: info.name):
        module = importlib.import_module(f"{package}.{info.name}")
        value = getattr(module, attribute, None)
        if isinstance(value, kind):
            found.append((module, value))
    return found
