"""``cltr --help`` does not import the heavy libraries: they load when a command needs them
(``cltr.lazy`` for pandas in modules the CLI imports at startup; function-level imports
elsewhere)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cltr.lazy import lazy_import

# scipy alone (scipy.special through its array-API layer, scipy.sparse, scipy.linalg) took half of
# `cltr --help`; threadpoolctl and socket are smaller but needed by no flag either
HEAVY = (
    "pandas",
    "pyarrow",
    "matplotlib",
    "lightgbm",
    "sklearn",
    "scipy",
    "dask",
    "xgboost",
    "joblib",
    "threadpoolctl",
    "socket",
)


def test_the_cli_starts_without_the_heavy_libraries():
    code = f"import sys; import cltr.cli; print(' '.join(name for name in {HEAVY!r} if name in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == []


def test_a_lazy_module_is_imported_at_its_first_attribute(tmp_path, monkeypatch):
    (tmp_path / "cltr_lazy_probe.py").write_text("import sys\nsys.cltr_lazy_probe_imports += 1\nVALUE = [1, 2]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "cltr_lazy_probe_imports", 0, raising=False)
    monkeypatch.delitem(sys.modules, "cltr_lazy_probe", raising=False)
    probe = lazy_import("cltr_lazy_probe")
    assert sys.cltr_lazy_probe_imports == 0 and "not imported yet" in repr(probe)
    assert probe.VALUE == [1, 2]
    assert probe.VALUE is sys.modules["cltr_lazy_probe"].VALUE
    assert sys.cltr_lazy_probe_imports == 1
    monkeypatch.delitem(sys.modules, "cltr_lazy_probe")


def test_a_missing_library_is_an_import_error_at_first_use():
    missing = lazy_import("cltr_no_such_library")
    with pytest.raises(ModuleNotFoundError) as raised:
        _ = missing.anything
    assert raised.value.name == "cltr_no_such_library"
