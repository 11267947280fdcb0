"""Heavy libraries imported when first used, so that ``cltr --help`` does not pay for them.

``cltr.cli`` imports most of the package to build its commands (every method's options
become flags), and pandas alone doubles the time ``cltr --help`` takes. A module that
needs pandas only inside some of its functions names it once, at the top, as::

    if TYPE_CHECKING:
        import pandas as pd
    else:
        pd = lazy_import("pandas")

and ``pd.read_csv(...)`` imports pandas on its first call. Type checkers see the real
module. Only the standard library is imported here.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["lazy_import"]


class LazyModule:
    """Stands for the module ``name`` and imports it on the first attribute asked of it;
    every attribute is then the module's own (``pd.DataFrame is pandas.DataFrame``)."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str):
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        module = self._module
        if module is None:
            # import_module takes the import lock, so threads asking at once import it once
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<module {self._name!r}, imported on first use ({state})>"


def lazy_import(name: str) -> Any:
    """A stand-in for ``import name`` that imports the module when an attribute of it is
    first used. An ImportError (the library not installed) is raised there, not here."""
    return LazyModule(name)
