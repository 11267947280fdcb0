"""bench/hard_logs.py's method entries: ``METHOD@name=value`` settings reach the method as
its options would hold them from a spec."""

import pytest

from tests.benches import load_bench


@pytest.fixture(scope="module")
def hard_logs():
    return load_bench("hard_logs")


def test_a_setting_is_read_as_a_number_a_boolean_or_a_string(hard_logs):
    assert hard_logs.method_options("tree-two-tower@leaf_l2=1") == ("tree-two-tower", {"leaf_l2": 1.0})
    assert hard_logs.method_options("svm-propdcg@criterion=dr") == ("svm-propdcg", {"criterion": "dr"})
    assert hard_logs.method_options("tree-propdcg@learning_rate=0.1@num_leaves=8") == (
        "tree-propdcg",
        {"learning_rate": 0.1, "num_leaves": 8},
    )
    with pytest.raises(ValueError, match="leaf_l2"):
        hard_logs.method_options("tree-two-tower@leaf_l2=-1")
