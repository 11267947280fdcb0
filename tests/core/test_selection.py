"""Model selection on validation estimates and the grid option (``cltr.core.selection``)."""

import numpy as np
import pytest

from cltr.core.selection import parse_grid, select_on_validation


def test_selection_keeps_best_and_ties_go_to_first():
    values = {0.1: 0.5, 1.0: 0.7, 10.0: 0.7}
    selection = select_on_validation([{"C": c} for c in values], lambda p, prev: (p["C"], {}),
                                     lambda model: values[model])
    assert selection.best == 1.0 and selection.best_estimate == 0.7 and len(selection.table) == 3


def test_selection_skips_nan():
    selection = select_on_validation([{"C": 1.0}, {"C": 2.0}], lambda p, prev: (p["C"], {}),
                                     lambda model: float("nan") if model == 1.0 else 0.3)
    assert selection.best == 2.0


def test_each_candidate_warm_starts_from_the_previous_and_reports_its_row():
    previous, rows = [], []
    selection = select_on_validation([{"C": 1.0}, {"C": 2.0}, {"C": 3.0}],
                                     lambda p, prev: (previous.append(prev) or p["C"], {"extra": p["C"] * 2}),
                                     lambda model: -abs(model - 2.0), progress=rows.append, criterion="score")
    assert previous == [None, 1.0, 2.0]
    assert [row["extra"] for row in rows] == [2.0, 4.0, 6.0] and rows == selection.table
    assert [row["score"] for row in rows] == [-1.0, 0.0, -1.0]
    assert selection.best_params == {"C": 2.0}
    with pytest.raises(ValueError, match="grid is empty"):
        select_on_validation([], lambda p, prev: (None, {}), lambda model: 0.0)


def test_parse_grid():
    assert parse_grid("1,0.1") == [0.1, 1.0]
    assert np.allclose(parse_grid("0.001:1000:7"), [1e-3, 1e-2, 1e-1, 1, 10, 100, 1000])
    with pytest.raises(ValueError, match="positive"):
        parse_grid("-1,2")
    with pytest.raises(ValueError, match=r"cannot read grid 'a,b': expected 'a,b,c' or 'low:high:count'"):
        parse_grid("a,b")


def test_parse_grid_refuses_non_finite_values_and_a_grid_that_cannot_fit(monkeypatch):
    import cltr.core.resources as resources

    for text in ("nan,1", "0.1,inf", "0.1:nan:3"):
        with pytest.raises(ValueError, match="must hold positive finite numbers"):
            parse_grid(text)
    with pytest.raises(ValueError, match="holds no value"):
        parse_grid("0.1:10:0")
    # refused before the grid exists: 0.1:10:1000000000 grew to 15.7 GB in 40 s
    monkeypatch.setattr(resources, "physical_memory", lambda: 8 << 30)
    with pytest.raises(ValueError, match=r"grid '0.1:10:1000000000' has 1,000,000,000 values, one training each, "
                                         r"and .* would need about 279 GiB, more than this machine's 8 GiB"):
        parse_grid("0.1:10:1000000000")
    assert len(parse_grid("0.1:10:1000")) == 1000


def test_a_grid_that_cannot_fit_is_a_usage_error_before_any_work(tmp_path, invoke, monkeypatch):
    import cltr.core.resources as resources

    monkeypatch.setattr(resources, "physical_memory", lambda: 8 << 30)
    out = invoke("train", "svm-rank", "--grid", "0.1:10:1000000000", workdir=tmp_path / "work", expect=2).output
    assert "1,000,000,000 values" in out and "279 GiB" in out and "Usage: cltr" in out
    assert not (tmp_path / "work").exists()
