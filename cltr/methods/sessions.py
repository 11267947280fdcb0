"""Sessions as ranking groups, for the tree libraries' own position debiasing
(``lightgbm-position``, ``xgboost-unbiased``).

Both libraries learn from one group per session: the documents displayed in it, in
displayed order, labelled 1 where clicked, with the displayed rank as the position. This
module turns ``TrainingData.displayed("train")`` into such groups, leaving out the
sessions without a click and, where the library weighs groups exactly, merging identical
sessions into one weighted group.

Why sessions without a click can go: every pairwise (LambdaMART) gradient comes from a
pair of documents with different labels, so a session whose labels are all 0 adds
nothing to the gradients, nor to the position-bias statistics built from them (XGBoost's
t+ / t- sums of pair costs; LightGBM's sums of per-position gradients). On a hard log most
sessions have no click, so this alone shrinks the data several-fold.

Why identical sessions can merge (LightGBM only): a deterministic production ranker shows
the same list in every pass, so many sessions of a query repeat the same clicks. LightGBM
multiplies each row's gradient and curvature by its weight and updates its position
biases from those weighted sums, so one group of weight k gives the gradients of k
identical groups (what counts rows instead, ``min_data_in_leaf``, the feature bins'
quantiles and the position-bias regularisation, sees distinct rows). XGBoost's group weights scale the
gradients but not the pair costs from which it estimates position biases, so merging
would tilt its bias estimates towards rare click patterns; it gets a seeded random
subset of the clicked sessions instead when there are too many (``subsample_sessions``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cltr.core.clicks import Displayed

__all__ = ["SessionGroups", "clicked_sessions", "session_groups", "subsample_sessions"]


@dataclass(frozen=True)
class SessionGroups:
    """Ranking groups made of sessions, rows in displayed order within each group.

    Attributes
    ----------
    rows : ndarray of int64, shape (n_rows,)
        Row of ``Displayed`` behind each training row.
    doc : ndarray of int64, shape (n_rows,)
        Row of the split's ``X``.
    label : ndarray of float64, shape (n_rows,)
        1.0 where clicked.
    position : ndarray of int64, shape (n_rows,)
        Displayed rank - 1 (0-based, as the libraries' examples write positions).
    group : ndarray of int64, shape (n_groups,)
        Sizes of consecutive groups.
    weight : ndarray of float64, shape (n_groups,)
        Sessions each group stands for (1 unless merged).
    n_sessions : int
        Sessions of the log, clicked or not.
    """

    rows: np.ndarray
    doc: np.ndarray
    label: np.ndarray
    position: np.ndarray
    group: np.ndarray
    weight: np.ndarray
    n_sessions: int

    @property
    def row_weight(self) -> np.ndarray:
        """Each row's group weight, shape (n_rows,)."""
        return np.repeat(self.weight, self.group)

    def info(self) -> dict:
        return {
            "sessions": int(self.n_sessions),
            "training_groups": len(self.group),
            "training_rows": len(self.rows),
            "sessions_represented": float(self.weight.sum()),
        }


def clicked_sessions(displayed: Displayed) -> np.ndarray:
    """Indices of the sessions with at least one click, shape (n_clicked,)."""
    if len(displayed) == 0:
        return np.zeros(0, dtype=np.int64)
    clicks = np.bincount(displayed.session, weights=displayed.click, minlength=displayed.n_sessions)
    return np.flatnonzero(clicks > 0).astype(np.int64)


def subsample_sessions(sessions: np.ndarray, most: int | None, rng: np.random.Generator) -> np.ndarray:
    """At most ``most`` of ``sessions``, drawn uniformly without replacement, in their order."""
    if most is None or len(sessions) <= most:
        return sessions
    return np.sort(rng.choice(sessions, size=int(most), replace=False))


def _rows_of(offsets: np.ndarray, sessions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sizes = offsets[sessions + 1] - offsets[sessions]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    rows = np.repeat(offsets[sessions] - starts[:-1], sizes) + np.arange(starts[-1])
    return rows.astype(np.int64), sizes.astype(np.int64)


def session_groups(displayed: Displayed, sessions: np.ndarray, *, merge: bool = False) -> SessionGroups:
    """Groups of the given sessions (in their order), identical ones merged if ``merge``.

    Two sessions are identical when they show the same documents at the same ranks with
    the same clicks; a merged group keeps the first one's rows and weighs their count.

    Parameters
    ----------
    displayed : Displayed
    sessions : ndarray of int64, shape (n_kept,)
        Increasing session indices.
    merge : bool

    Returns
    -------
    SessionGroups
    """
    offsets = displayed.session_offsets()
    sessions = np.asarray(sessions, dtype=np.int64)
    weight = np.ones(len(sessions))
    if merge and len(sessions):
        rows, sizes = _rows_of(offsets, sessions)
        # one row per session: (doc, rank, click) codes in displayed order, padded with -1
        code = (displayed.doc[rows] * (int(displayed.rank.max()) + 1) + displayed.rank[rows]) * 2 + displayed.click[
            rows
        ]
        table = np.full((len(sessions), int(sizes.max())), -1, dtype=np.int64)
        owner = np.repeat(np.arange(len(sessions)), sizes)
        table[owner, np.arange(len(rows)) - np.repeat(np.cumsum(sizes) - sizes, sizes)] = code
        _, first, counts = np.unique(table, axis=0, return_index=True, return_counts=True)
        order = np.argsort(first)
        sessions, weight = sessions[first[order]], counts[order].astype(np.float64)
    rows, sizes = _rows_of(offsets, sessions)
    return SessionGroups(
        rows=rows,
        doc=displayed.doc[rows].astype(np.int64),
        label=displayed.click[rows].astype(np.float64),
        position=(displayed.rank[rows] - 1).astype(np.int64),
        group=sizes,
        weight=weight,
        n_sessions=displayed.n_sessions,
    )
