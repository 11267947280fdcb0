"""Dataset loaders: one file each, found by a registry.

A loader module in this package defines ``LOADER = Loader(...)``: its name, the help of its
command, an ``Options`` dataclass of its settings (``cltr.options``: typed, defaulted, a
help text per field; files and directories as ``option(..., path="file"|"dir")``), the
dataset convention it sets (its ``relevant_from`` option's default, and ``default_passes``,
the passes of simulated clicks a dataset it prepares gets by default) and a loading function

    load(options, *, name, progress) -> Dataset

``name`` is the name the dataset is stored under, ``progress`` the ``(path, bytes_read,
file_size)`` callback of the files read (``cltr.data.svmlight.load_svmlight_split``'s). The
reading itself lives in ``cltr.data``; a module here says which of it a loader calls.

``cltr prepare NAME`` (its help, a flag per option, ``--name`` defaulting to the loader's
name, and ``--dcg-log``), ``cltr.api.load_dataset`` and the docs' reference page are derived
from ``LOADER``: adding a loader is adding a file here. ``load`` records the loader's
``default_passes`` in the dataset's ``meta``, which ``cltr simulate`` and the figure specs
read (``cltr.core.queries.default_passes``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

from cltr.core.queries import Dataset, passes_by_name
from cltr.options import Options
from cltr.registry import by_name, lookup, registered

__all__ = ["Loader", "loaders", "get", "load", "DCG_LOGS"]

# --dcg-log: the base of the log in Avg DCG's gain 1/log(1 + rank)
DCG_LOGS = {"e": math.e, "2": 2.0}


@dataclass(frozen=True)
class Loader:
    """A dataset loader as the rest of cltr sees it.

    Attributes
    ----------
    name : str
        ``cltr prepare NAME``; the name a dataset is stored under unless ``--name`` says otherwise.
    summary : str
        The help of ``cltr prepare NAME`` (its first sentence lists it in ``cltr prepare --help``).
    options : type
        Its ``Options`` dataclass: a flag of ``cltr prepare NAME`` and a keyword of
        ``api.load_dataset`` per field.
    load : callable
        ``(options, *, name, progress) -> Dataset``.
    default_passes : int, optional
        Passes of simulated clicks over the training queries a dataset it prepares gets by
        default; None: by the dataset's name (``cltr.core.queries.passes_by_name``).
    description : str
        The long text of the reference page (defaults to the summary).
    """

    name: str
    summary: str
    options: type[Options]
    load: Callable[..., Dataset]
    default_passes: int | None = None
    description: str = ""

    def parse_options(self, values: dict | Options | None, *, where: str | None = None) -> Options:
        """Validated options from a dict (a caller's keywords, the command line) or an instance."""
        return self.options.parse(values, where=where or f"options of loader {self.name}")

    def passes(self, name: str) -> int:
        """The default passes of a dataset it prepares under ``name``."""
        return passes_by_name(name) if self.default_passes is None else self.default_passes


_REGISTRY: dict[str, Loader] | None = None


def loaders() -> dict[str, Loader]:
    """Every loader, by name, in name order (``cltr prepare --help`` sorts them so too)."""
    return registered(__name__, "LOADER", Loader, by_name)


def get(name: str) -> Loader:
    return lookup(loaders(), name, "dataset loader")


def load(
    kind: str,
    options: dict | Options | None = None,
    *,
    name: str | None = None,
    dcg_log: str = "e",
    progress: Callable[[str, int, int], None] | None = None,
) -> Dataset:
    """The dataset ``cltr prepare KIND`` stores: read by loader ``kind`` with its
    ``options`` (validated here), named ``name`` (default: the loader's name), with the
    log base ``dcg_log`` ("e" or "2") of Avg DCG and the loader's default passes in its
    ``meta``."""
    loader = get(kind)
    options = loader.parse_options(options)
    if dcg_log not in DCG_LOGS:
        raise ValueError(f"dcg_log must be one of {', '.join(DCG_LOGS)}, found {dcg_log!r}")
    name = loader.name if name is None else name
    dataset = loader.load(options, name=name, progress=progress)
    return dataclasses.replace(
        dataset, dcg_base=DCG_LOGS[dcg_log], meta={**dataset.meta, "default_passes": loader.passes(name)}
    )
