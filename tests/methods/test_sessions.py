"""Sessions as ranking groups for the tree libraries' position debiasing
(``cltr.methods.sessions``): clicked sessions only, identical ones merged with their count."""

import numpy as np

from cltr.core.clicks import Displayed
from cltr.methods.sessions import clicked_sessions, session_groups, subsample_sessions


def _displayed(sessions):
    """Displayed rows from [(docs in rank order, clicks)], one query per distinct first doc."""
    columns = {k: [] for k in ("session", "query", "doc", "rank", "click")}
    for s, (docs, clicks) in enumerate(sessions):
        for r, (d, c) in enumerate(zip(docs, clicks, strict=True), start=1):
            for k, v in zip(columns, (s, docs[0] // 10, d, r, c), strict=True):
                columns[k].append(v)
    n = len(columns["doc"])
    return Displayed(
        **{k: np.array(v, dtype=np.int8 if k == "click" else np.int64) for k, v in columns.items()},
        propensity=np.ones(n),
        ranker=np.zeros(n, dtype=np.int64),
    )


SESSIONS = [
    ([0, 1, 2], [0, 1, 0]),  # 0
    ([0, 1, 2], [0, 0, 0]),  # 1: no click, left out
    ([10, 11], [1, 0]),  # 2
    ([0, 1, 2], [0, 1, 0]),  # 3: same as 0
    ([0, 2, 1], [0, 1, 0]),  # 4: other order, its own group
    ([10, 11], [1, 0]),
]  # 5: same as 2


def test_clicked_sessions_leave_out_sessions_without_a_click():
    assert clicked_sessions(_displayed(SESSIONS)).tolist() == [0, 2, 3, 4, 5]


def test_unmerged_groups_keep_every_clicked_session_in_displayed_order():
    displayed = _displayed(SESSIONS)
    groups = session_groups(displayed, clicked_sessions(displayed))
    assert groups.group.tolist() == [3, 2, 3, 3, 2] and groups.weight.tolist() == [1] * 5
    assert groups.doc.tolist() == [0, 1, 2, 10, 11, 0, 1, 2, 0, 2, 1, 10, 11]
    assert groups.label.tolist() == [0, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 1, 0]
    assert groups.position.tolist() == [0, 1, 2, 0, 1, 0, 1, 2, 0, 1, 2, 0, 1]


def test_identical_sessions_merge_into_one_group_weighted_by_their_count():
    displayed = _displayed(SESSIONS)
    groups = session_groups(displayed, clicked_sessions(displayed), merge=True)
    # first appearances in order: session 0 (x2), 2 (x2), 4 (x1)
    assert groups.group.tolist() == [3, 2, 3] and groups.weight.tolist() == [2, 2, 1]
    assert groups.doc.tolist() == [0, 1, 2, 10, 11, 0, 2, 1]
    assert groups.label.tolist() == [0, 1, 0, 1, 0, 0, 1, 0]
    assert groups.row_weight.tolist() == [2, 2, 2, 2, 2, 1, 1, 1]
    assert groups.info()["sessions_represented"] == 5 and groups.info()["sessions"] == 6


def test_subsample_keeps_order_and_size():
    sessions = np.arange(0, 100, 3)
    kept = subsample_sessions(sessions, 10, np.random.default_rng(0))
    assert len(kept) == 10 and np.all(np.diff(kept) > 0) and set(kept) <= set(sessions)
    assert subsample_sessions(sessions, None, np.random.default_rng(0)) is sessions
