"""bench/hard_logs.py's method entries: ``METHOD@name=value`` settings reach the method as
its options would hold them from a spec."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def hard_logs():
    spec = importlib.util.spec_from_file_location("hard_logs_bench", ROOT / "bench" / "hard_logs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_setting_is_read_as_a_number_a_boolean_or_a_string(hard_logs):
    assert hard_logs.method_options("tree-two-tower@leaf_l2=1") == ("tree-two-tower", {"leaf_l2": 1.0})
    assert hard_logs.method_options("svm-propdcg@criterion=dr") == ("svm-propdcg", {"criterion": "dr"})
    assert hard_logs.method_options("tree-propdcg@learning_rate=0.1@num_leaves=8") == (
        "tree-propdcg",
        {"learning_rate": 0.1, "num_leaves": 8},
    )
    with pytest.raises(ValueError, match="leaf_l2"):
        hard_logs.method_options("tree-two-tower@leaf_l2=-1")
