"""Plug-in discovery: every module of a package that defines a given attribute."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Protocol, TypeVar

__all__ = ["discover", "by_order", "by_name", "registered", "lookup"]


class _Named(Protocol):
    """What every registry entry has: the name it is chosen by."""

    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=_Named)


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


def by_order(found: Iterable[tuple[ModuleType, T]]) -> dict[str, T]:
    """``discover``'s values by name, in the order of their modules' ``ORDER`` (100 when
    absent), then name: the order of a command's choices and help."""
    ranked = sorted((getattr(module, "ORDER", 100), value.name, value) for module, value in found)
    return {name: value for _, name, value in ranked}


def by_name(found: Iterable[tuple[ModuleType, T]]) -> dict[str, T]:
    """``discover``'s values by name, in name order."""
    return {value.name: value for value in sorted((value for _, value in found), key=lambda value: value.name)}


def registered(
    package: str,
    attribute: str,
    kind: type[T],
    order: Callable[[Iterable[tuple[ModuleType, T]]], dict[str, T]] = by_order,
) -> dict[str, T]:
    """The registry of ``package``: its modules' ``attribute`` values (``discover``), ordered
    by ``order``, found on the first call and kept in the package's ``_REGISTRY``. The same
    dict on every call, so that a test may add to it, or set ``_REGISTRY`` to None to have the
    package searched again."""
    module = sys.modules[package]
    known = getattr(module, "_REGISTRY", None)
    if known is None:
        known = order(discover(package, module.__path__, attribute, kind))
        module._REGISTRY = known  # type: ignore[attr-defined]
    return known


def lookup(known: dict[str, T], name: str, what: str) -> T:
    """``known[name]``, or a ValueError naming ``what`` was asked for and every known name."""
    if name not in known:
        raise ValueError(f"unknown {what} {name!r}; known: {', '.join(known)}")
    return known[name]
