"""Click prediction in ``cltr evaluate``: a stored click model's held-out log-likelihood and
perplexity per rank against a brute force that enumerates every click pattern of a session
by the model's generative story."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest

from cltr.core.click_models_fit import ClickModel
from cltr.pipeline.click_prediction import held_out_rows, model_from_arrays, score_rows
from cltr.pipeline.workspace import Workspace


def _pattern_probability(model: ClickModel, alpha: list[float], sigma: list[float], clicks) -> float:
    """P(C_1..C_n = clicks) by the model's story, summing over whether each rank is examined."""
    n = len(clicks)
    if model.name == "pbm":
        return math.prod(
            model.examination[r] * alpha[r] if clicks[r] else 1 - model.examination[r] * alpha[r] for r in range(n)
        )
    if model.name == "ubm":
        p, previous = 1.0, 0
        for r in range(n):
            q = model.examination[r, previous] * alpha[r]
            p *= q if clicks[r] else 1 - q
            previous = r + 1 if clicks[r] else previous
        return p
    # cascade family: walk every examination path
    total = 0.0
    for path in itertools.product((0, 1), repeat=n):  # path[r]: whether rank r is examined
        if path[0] != 1:
            continue
        p = 1.0
        for r in range(n):
            if not path[r]:
                p *= 1.0 if not clicks[r] else 0.0
                if r + 1 < n and path[r + 1]:
                    p = 0.0  # an unexamined rank ends the scan
                continue
            p *= alpha[r] if clicks[r] else 1 - alpha[r]
            if r + 1 < n:
                if model.name == "cascade":
                    go = 0.0 if clicks[r] else 1.0
                elif model.name == "dcm":
                    go = model.continuation[r] if clicks[r] else 1.0
                else:  # dbn
                    gamma = model.continuation[0]
                    go = gamma * (1 - sigma[r]) if clicks[r] else gamma
                p *= go if path[r + 1] else 1 - go
        total += p
    return total


def brute_force(model: ClickModel, sessions: list[tuple[list[int], list[int]]]):
    """(mean log-likelihood, perplexity per rank, their mean) of sessions given as (pair
    index per rank, clicks), every rank from 1 shown."""
    depth = max(len(pairs) for pairs, _ in sessions)
    log_likelihood, log2 = [], [[] for _ in range(depth)]
    for pairs, clicks in sessions:
        n = len(pairs)
        alpha = [model.attractiveness[p] for p in pairs]
        sigma = [model.satisfaction[p] if model.satisfaction is not None else 0.0 for p in pairs]
        joint = {
            pattern: _pattern_probability(model, alpha, sigma, pattern)
            for pattern in itertools.product((0, 1), repeat=n)
        }
        assert abs(sum(joint.values()) - 1) < 1e-12

        def prefix(length, clicks=clicks, joint=joint):
            return sum(p for pattern, p in joint.items() if tuple(pattern[:length]) == tuple(clicks[:length]))

        log_likelihood.append(sum(math.log(prefix(r + 1) / prefix(r)) for r in range(n)))
        for r in range(n):
            marginal = sum(p for pattern, p in joint.items() if pattern[r] == 1)
            log2[r].append(math.log2(marginal if clicks[r] else 1 - marginal))
    perplexity = [2 ** -np.mean(values) for values in log2]
    return float(np.mean(log_likelihood)), perplexity, float(np.mean(perplexity))


def toy_model(name: str) -> ClickModel:
    rng = np.random.default_rng(7)
    pairs = 4
    alpha = np.append(rng.uniform(0.1, 0.9, pairs), 0.4)  # the last: unseen pairs
    kwargs = {}
    if name == "pbm":
        kwargs["examination"] = np.array([0.95, 0.6, 0.3])
    elif name == "ubm":
        kwargs["examination"] = np.tril(rng.uniform(0.2, 0.9, (3, 3)), k=0) + 0.05
    elif name == "dcm":
        kwargs["continuation"] = np.array([0.7, 0.4, 0.5])
    elif name == "dbn":
        kwargs["continuation"] = np.array([0.8])
        kwargs["satisfaction"] = np.append(rng.uniform(0.1, 0.9, pairs), 0.5)
    return ClickModel(
        name=name,
        pair_query=np.array([1, 1, 2, 2]),
        pair_doc=np.array([0, 1, 0, 1]),
        attractiveness=alpha,
        info={"max_rank": 3},
        **kwargs,
    )


SESSIONS = [  # (query, documents from rank 1, clicks)
    (1, [0, 1, 5], [1, 0, 0]),
    (1, [1, 0], [0, 1]),
    (2, [1, 0, 3], [1, 0, 1]),
    (3, [0, 2, 1], [0, 0, 0]),  # a query the model has not seen
    (2, [0, 1, 2], [0, 1, 0]),
]


@pytest.mark.parametrize("name", ["pbm", "ubm", "cascade", "dcm", "dbn"])
def test_held_out_scores_match_the_enumerated_click_patterns(name):
    model = toy_model(name)
    known = {(1, 0): 0, (1, 1): 1, (2, 0): 2, (2, 1): 3}
    rows = {key: [] for key in ("session", "query", "doc", "rank", "click")}
    sessions = []
    for s, (query, docs, clicks) in enumerate(SESSIONS):
        if name == "cascade" and sum(clicks) > 1:
            clicks = [c if r == clicks.index(1) else 0 for r, c in enumerate(clicks)]  # one click at most
        for r, (doc, c) in enumerate(zip(docs, clicks, strict=True)):
            for key, value in zip(rows, (s, query, doc, r + 1, c), strict=True):
                rows[key].append(value)
        sessions.append(([known.get((query, doc), 4) for doc in docs], clicks))
    scores = score_rows(model, {key: np.array(values) for key, values in rows.items()}, 3)
    log_likelihood, per_rank, mean = brute_force(model, sessions)
    assert scores.log_likelihood == pytest.approx(log_likelihood, rel=1e-9)
    assert scores.perplexity_by_rank == pytest.approx(per_rank, rel=1e-9)
    assert scores.perplexity == pytest.approx(mean, rel=1e-9)
    assert scores.sessions == len(SESSIONS)


def test_evaluate_prints_the_click_prediction_of_the_fitted_model(tmp_path, invoke):
    work = tmp_path / "work"
    invoke("prepare", "synthetic", "--queries", 40, "--relevant-from", 1, workdir=work)
    invoke("simulate", "--passes", 3, "--click-model", "dcm", workdir=work)
    invoke("train", "svm-rank", "-C", 1, workdir=work)
    before = invoke("evaluate", workdir=work).output
    assert "click prediction" not in before  # no click model fitted yet
    out = invoke("clicks", "fit", "--model", "dcm", "--max-rank", 4, "--iterations", 50, workdir=work).output
    key = re.search(r"stored as click model (\S+);", out).group(1)
    out = invoke("evaluate", workdir=work).output
    found = re.search(
        r"click model (\S+) \(dcm, .*? on its (\d+) vali sessions at ranks 1\.\.4: log-likelihood "
        r"(-?[\d.]+) per "
        r"session, perplexity ([\d.]+)",
        out,
    )
    assert found and found.group(1) == key
    # the brute force on the stored model and the vali sessions of the log it was fitted on
    workspace = Workspace(work)
    fitted = workspace.load("synthetic", "clickmodels", key)
    clicks = workspace.load("synthetic", "clicks", fitted.config["clicks"])
    dataset, _ = workspace.load_dataset("synthetic")
    model = model_from_arrays("dcm", fitted.arrays)
    rows = held_out_rows(clicks, dataset)
    assert (rows["query"] < 0).all()  # vali queries never take a training pair's parameters
    sessions = []
    for s in np.unique(rows["session"]):
        mine = (rows["session"] == s) & (rows["rank"] <= 4)
        order = np.argsort(rows["rank"][mine])
        sessions.append(([model.attractiveness.size - 1] * int(mine.sum()), rows["click"][mine][order].tolist()))
    log_likelihood, _, perplexity = brute_force(model, sessions)
    assert int(found.group(2)) == len(sessions)
    assert float(found.group(3)) == pytest.approx(log_likelihood, abs=6e-5)
    assert float(found.group(4)) == pytest.approx(perplexity, abs=6e-5)
    assert re.search(r"click-model", invoke("evaluate", "--help").output)


def test_independent_click_scores_match_the_enumerated_click_patterns_of_a_pbm():
    from cltr.core.click_models_fit import independent_click_scores

    model = toy_model("pbm")
    known = {(1, 0): 0, (1, 1): 1, (2, 0): 2, (2, 1): 3}
    probability, session, rank, click, sessions = [], [], [], [], []
    for s, (query, docs, clicks) in enumerate(SESSIONS):
        pairs = [known.get((query, doc), 4) for doc in docs]
        for r, (pair, c) in enumerate(zip(pairs, clicks, strict=True)):
            probability.append(model.examination[r] * model.attractiveness[pair])
            session.append(f"s{s}")
            rank.append(r + 1)
            click.append(c)
        sessions.append((pairs, clicks))
    scores = independent_click_scores(
        np.array(probability), np.array(session), np.array(rank), np.array(click), max_rank=3
    )
    log_likelihood, per_rank, mean = brute_force(model, sessions)
    assert scores.log_likelihood == pytest.approx(log_likelihood, rel=1e-12)
    assert scores.perplexity_by_rank == pytest.approx(per_rank, rel=1e-12)
    assert scores.perplexity == pytest.approx(mean, rel=1e-12) and scores.sessions == len(SESSIONS)


def test_evaluate_prints_the_click_prediction_of_a_two_tower_model(tmp_path, invoke):
    from scipy.special import expit

    from cltr.pipeline.models import scorer_from_arrays
    from cltr.pipeline.stages import export_rows

    work = tmp_path / "work"
    invoke("prepare", "synthetic", "--queries", 40, "--relevant-from", 1, workdir=work)
    invoke("simulate", "--passes", 3, "--top-k", 5, workdir=work)
    invoke("train", "two-tower", "--l2", "0.1", workdir=work)
    out = invoke("evaluate", workdir=work).output
    found = re.search(
        r"click prediction of model (\S+) \(relevance tower x bias tower, (\w+)\) on its (\d+) vali "
        r"sessions at ranks 1\.\.5: log-likelihood (-?[\d.]+) per session, perplexity ([\d.]+)",
        out,
    )
    assert found, out
    workspace = Workspace(work)
    model = workspace.load("synthetic", "models", found.group(1))
    clicks = workspace.load("synthetic", "clicks", model.config["clicks"])
    dataset, _ = workspace.load_dataset("synthetic")
    bias = model.info["position_bias"]["logit"]
    relevance = scorer_from_arrays(model.arrays).scores(dataset.vali.X)
    columns = export_rows(clicks, "vali", dataset)
    qid_row = {qid: q for q, qid in enumerate(dataset.vali.qid.tolist())}
    per_session: dict = {}
    per_rank: dict = {}
    for s, qid, doc, rank, c in zip(
        *(columns[k].tolist() for k in ("session", "qid", "doc", "rank", "click")), strict=True
    ):
        if rank > len(bias):
            continue
        r = relevance[dataset.vali.offsets[qid_row[qid]] + doc]
        p = expit(r + bias[rank - 1]) if found.group(2) == "additive" else expit(r) * expit(bias[rank - 1])
        q = p if c else 1 - p
        per_session[s] = per_session.get(s, 0.0) + math.log(q)
        per_rank.setdefault(rank, []).append(math.log2(q))
    assert int(found.group(3)) == len(per_session)
    assert float(found.group(4)) == pytest.approx(np.mean(list(per_session.values())), abs=6e-5)
    perplexity = np.mean([2 ** -np.mean(values) for values in per_rank.values()])
    assert float(found.group(5)) == pytest.approx(perplexity, abs=6e-5)


def test_a_two_tower_model_and_a_click_model_are_judged_at_the_same_ranks(monkeypatch):
    from types import SimpleNamespace

    from cltr.pipeline import click_prediction
    from cltr.pipeline.click_prediction import compared_depth, held_out_scores

    tower = SimpleNamespace(config={"method": "two-tower"}, info={"position_bias": {"logit": [0.0] * 5}})
    fitted = SimpleNamespace(config={"model": "pbm"}, info={"max_rank": 3}, arrays={})
    assert compared_depth(tower, SimpleNamespace(info={"max_rank": 10})) == 5  # the bias tower's 5 ranks
    assert compared_depth(tower, fitted) == 3 and compared_depth(tower, None) == 5
    assert compared_depth(SimpleNamespace(config={"method": "svm-rank"}, info={}), None) == 10
    # the click model is scored at the depth asked, never deeper than it was fitted
    model = toy_model("pbm")
    rows = {
        key: np.array(values)
        for key, values in zip(
            ("session", "query", "doc", "rank", "click"),
            zip(
                *[
                    (s, q, d, r + 1, c)
                    for s, (q, docs, clicks) in enumerate(SESSIONS)
                    for r, (d, c) in enumerate(zip(docs, clicks, strict=True))
                ],
                strict=True,
            ),
            strict=True,
        )
    }
    monkeypatch.setattr(click_prediction, "model_from_arrays", lambda name, arrays, info=None: model)
    monkeypatch.setattr(click_prediction, "held_out_rows", lambda clicks, dataset: rows)
    for depth, expected in ((2, 2), (3, 3), (None, 3), (7, 3)):
        scores = held_out_scores(fitted, None, None, max_rank=depth)
        assert len(scores.perplexity_by_rank) == expected
        assert scores.log_likelihood == pytest.approx(score_rows(model, rows, expected).log_likelihood)
