"""bench/merge_figure_rows.py: one method's rows of a stored figure replaced by a fresh run's."""

import pandas as pd
import pytest

from tests.benches import load_bench


@pytest.fixture(scope="module")
def bench():
    return load_bench("merge_figure_rows")


def _rows(values: dict, clicks=100) -> pd.DataFrame:
    rows = []
    for (rep, eta, method), dcg in values.items():
        rows.append(
            {
                "repetition": rep,
                "seed": 7,
                "point_eps_neg": 0.1,
                "point_eta": eta,
                "method": method,
                "train_clicks": clicks + rep,
                "avg_dcg": dcg,
                "chosen": f"{method}-{rep}-{eta}",
            }
        )
    return pd.DataFrame(rows)


def test_only_the_methods_rows_change_and_the_stored_order_stays(bench):
    stored = _rows(
        {
            (0, 1.0, "production"): 0.5,
            (0, 1.0, "a"): 0.6,
            (0, 1.0, "b"): 0.7,
            (1, 1.0, "production"): 0.55,
            (1, 1.0, "a"): 0.61,
            (1, 1.0, "b"): 0.72,
        }
    )
    fresh = _rows({(1, 1.0, "production"): 0.55, (1, 1.0, "b"): 0.8, (0, 1.0, "production"): 0.5, (0, 1.0, "b"): 0.65})
    fresh.loc[fresh.method == "b", "chosen"] = "new"
    merged = bench.merged_rows(stored, fresh, "b")
    assert list(merged.columns) == list(stored.columns) and merged.dtypes.equals(stored.dtypes)
    assert list(merged.method) == list(stored.method) and list(merged.repetition) == list(stored.repetition)
    assert list(merged.avg_dcg) == [0.5, 0.6, 0.65, 0.55, 0.61, 0.8]
    assert list(merged.chosen[merged.method == "b"]) == ["new", "new"]
    report = bench.agreement(stored, fresh, "b")
    assert report["production"] == {
        "rows": 2,
        "identical": 2,
        "largest_difference": 0.0,
        "mean_difference": 0.0,
        "higher": 0,
        "same_clicks": 2,
    }
    assert report["b"]["identical"] == 0 and report["b"]["higher"] == 1
    assert report["b"]["mean_difference"] == pytest.approx((0.65 - 0.7 + 0.8 - 0.72) / 2)


def test_a_fresh_run_missing_some_of_the_methods_runs_is_refused(bench):
    stored = _rows({(0, 1.0, "b"): 0.7, (1, 1.0, "b"): 0.72})
    with pytest.raises(ValueError, match="lacks 1 of 'b'"):
        bench.merged_rows(stored, _rows({(0, 1.0, "b"): 0.6}), "b")
    with pytest.raises(ValueError, match="no row of 'c'"):
        bench.merged_rows(stored, stored, "c")
