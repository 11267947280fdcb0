"""The scripts of ``bench/`` as modules, for the tests of their pure parts."""

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench(stem: str):
    """``bench/STEM.py`` imported as the module ``STEM_bench`` (registered in ``sys.modules``:
    dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(f"{stem}_bench", BENCH / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
