"""Ranks, metrics (hand-computed, with ties) and the IPS / SNIPS estimators."""

import itertools
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

from cltr.clickmodels.pbm import PBMSettings, position_based_model
from cltr.core.clicks import ClickLog, simulate_clicks
from cltr.core.ranking import (
    avg_dcg,
    avg_rank,
    dcg_gain,
    evaluate,
    ips_estimate,
    ndcg_at_k,
    ndcg_per_query,
    rank_documents,
    snips_avg_dcg,
    snips_estimate,
    validation_estimate,
)
from cltr.core.scorers import LinearScorer


def test_ranks_descending_within_each_query():
    offsets = np.array([0, 3, 5])
    scores = np.array([0.1, 0.9, 0.5, -1.0, 2.0])
    ranks = rank_documents(scores, offsets, np.random.default_rng(0))
    assert ranks.tolist() == [3, 1, 2, 2, 1]


def test_ties_are_broken_at_random_not_by_file_order():
    offsets = np.array([0, 4])
    scores = np.zeros(4)
    seen = {tuple(rank_documents(scores, offsets, np.random.default_rng(s))) for s in range(60)}
    assert len(seen) > 10  # many of the 24 permutations appear
    for ranks in seen:
        assert sorted(ranks) == [1, 2, 3, 4]


def test_constant_scorer_gets_random_ranking_value():
    # One query, 2 relevant docs among 4: the expected Avg Rank of a random ranking is 2.5.
    offsets = np.array([0, 4])
    relevant = np.array([True, False, True, False])
    values = [avg_rank(rank_documents(np.zeros(4), offsets, np.random.default_rng(s)), relevant) for s in range(4000)]
    assert np.mean(values) == pytest.approx(2.5, abs=0.05)


def test_same_seed_same_ranks():
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 3, 50).astype(float)
    offsets = np.array([0, 20, 50])
    a = rank_documents(scores, offsets, np.random.default_rng(7))
    b = rank_documents(scores, offsets, np.random.default_rng(7))
    assert np.array_equal(a, b)


def test_bad_scores_are_rejected():
    with pytest.raises(ValueError, match="must have shape"):
        rank_documents(np.zeros(3), np.array([0, 4]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="finite"):
        rank_documents(np.array([0.0, np.nan]), np.array([0, 2]), np.random.default_rng(0))


def test_metrics_hand_computed():
    # Query 0: relevant at ranks 1 and 3; query 1: relevant at rank 2; query 2: none relevant.
    ranks = np.array([1, 2, 3, 1, 2, 1, 2])
    relevant = np.array([True, False, True, False, True, False, False])
    offsets = np.array([0, 3, 5, 7])
    assert avg_rank(ranks, relevant) == pytest.approx((1 + 3 + 2) / 3)
    # the paper's natural log by default; log2 one argument away, the same ranking scaled
    expected_dcg = (1 / np.log(2) + 1 / np.log(4) + 1 / np.log(3)) / 3
    assert avg_dcg(ranks, relevant) == pytest.approx(expected_dcg)
    expected_log2 = (1 / np.log2(2) + 1 / np.log2(4) + 1 / np.log2(3)) / 3
    assert avg_dcg(ranks, relevant, base=2) == pytest.approx(expected_log2)
    # nDCG@10: q0 (1 + 0.5) / (1 + 1/log2 3); q1 (1/log2 3) / 1; q2 has no relevant document.
    q0 = (1 + 0.5) / (1 + 1 / np.log2(3))
    q1 = 1 / np.log2(3)
    assert ndcg_at_k(ranks, relevant, offsets, k=10, queries="relevant") == pytest.approx((q0 + q1) / 2)
    # At k = 1 only rank-1 relevant documents count.
    assert ndcg_at_k(ranks, relevant, offsets, k=1, queries="relevant") == pytest.approx((1.0 + 0.0) / 2)


def test_ndcg_two_conventions_hand_computed():
    # Three queries, binary relevance, log2 gains (trec_eval's ndcg_cut_10 on these qrels):
    # q0: relevant at ranks 2 and 3 of 4: DCG = 1/log2 3 + 1/2, ideal = 1 + 1/log2 3;
    # q1: relevant at rank 12 of 12, beyond the cut-off: 0;
    # q2: nothing relevant: undefined, which trec_eval scores 0 and the other average leaves out.
    ranks = np.array([1, 2, 3, 4, *range(1, 13), 1, 2])
    relevant = np.zeros(len(ranks), dtype=bool)
    relevant[[1, 2, 4 + 11]] = True
    offsets = np.array([0, 4, 16, 18])
    q0 = (1 / np.log2(3) + 0.5) / (1 + 1 / np.log2(3))
    per_query = ndcg_per_query(ranks, relevant, offsets, k=10)
    np.testing.assert_allclose(per_query[:2], [q0, 0.0], rtol=1e-12)
    assert np.isnan(per_query[2])
    assert ndcg_at_k(ranks, relevant, offsets, k=10, queries="all") == pytest.approx((q0 + 0 + 0) / 3, rel=1e-12)
    assert ndcg_at_k(ranks, relevant, offsets, k=10, queries="relevant") == pytest.approx((q0 + 0) / 2, rel=1e-12)
    # without any relevant document: 0 over all queries, undefined over the relevant ones
    assert ndcg_at_k(ranks, np.zeros(len(ranks), bool), offsets, queries="all") == 0.0
    assert np.isnan(ndcg_at_k(ranks, np.zeros(len(ranks), bool), offsets, queries="relevant"))
    with pytest.raises(ValueError, match="queries must be one of all, relevant"):
        ndcg_at_k(ranks, relevant, offsets, queries="some")
    # evaluate reports both, named, on the same ranking (scores = -rank: no ties)
    queries = SimpleNamespace(X=-ranks[:, None].astype(float), offsets=offsets)
    metrics = evaluate(LinearScorer(np.array([1.0])), queries, relevant, rng=np.random.default_rng(0), dcg_base=np.e)
    assert metrics["ndcg@10"] == pytest.approx((q0 + 0 + 0) / 3, rel=1e-12)
    assert metrics["ndcg@10_relevant_queries"] == pytest.approx((q0 + 0) / 2, rel=1e-12)


def test_metrics_with_tied_scores_average_to_permutation_mean():
    offsets = np.array([0, 3])
    relevant = np.array([True, False, False])
    scores = np.array([1.0, 1.0, 0.0])  # the relevant doc ties with one irrelevant doc
    values = [avg_dcg(rank_documents(scores, offsets, np.random.default_rng(s)), relevant) for s in range(4000)]
    assert np.mean(values) == pytest.approx((1 / np.log(2) + 1 / np.log(3)) / 2, abs=0.01)


def test_snips_hand_computed():
    ranks = np.array([1, 3, 2])
    click_doc = np.array([0, 1])
    propensity = np.array([1.0, 0.5])
    expected = (1 / 1 * dcg_gain(1) + 1 / 0.5 * dcg_gain(3)) / (1 + 2)
    assert snips_avg_dcg(ranks, click_doc, propensity) == pytest.approx(expected)
    assert snips_estimate(np.ones(2), propensity) == pytest.approx(1.0)


def test_ips_is_unbiased_and_naive_is_not():
    """Averaged over many logs, the IPS estimate of the DCG of a new ranking is its true value."""
    offsets = np.array([0, 5])
    relevant = np.array([False, True, False, True, True])
    presented = np.array([1, 2, 3, 4, 5])  # the logging ranking
    evaluated = np.array([5, 1, 4, 2, 3])  # the ranking whose DCG we estimate
    truth = dcg_gain(evaluated[relevant]).sum()  # per-session DCG summed over relevant docs
    click_probability, propensity = position_based_model(presented, relevant, PBMSettings(eta=1.0, eps_neg=0.0))
    rng = np.random.default_rng(11)
    ips, naive = [], []
    for _ in range(300):
        log = simulate_clicks(presented, click_probability, propensity, offsets, passes=50, rng=rng)
        gain = dcg_gain(evaluated[log.doc])
        ips.append(ips_estimate(gain, log.propensity, n_sessions=log.n_sessions))
        naive.append(ips_estimate(gain, np.ones(len(log)), n_sessions=log.n_sessions))
    standard_error = np.std(ips) / np.sqrt(len(ips))
    assert abs(np.mean(ips) - truth) < 4 * standard_error
    assert abs(np.mean(naive) - truth) > 0.2 * truth


def test_ips_rejects_no_sessions():
    with pytest.raises(ValueError, match="n_sessions"):
        ips_estimate(np.ones(1), np.ones(1), n_sessions=0)


def test_avg_rank_matches_permutation_enumeration():
    # Brute force over all 4! rankings of one query: rank_documents puts every strict
    # ordering exactly where its scores say ...
    offsets = np.array([0, 4])
    relevant = np.array([True, False, True, False])
    permutations = [np.array(p) + 1 for p in itertools.permutations(range(4))]
    values = []
    for ranking in permutations:
        ranks = rank_documents(-ranking.astype(float), offsets, np.random.default_rng(0))
        np.testing.assert_array_equal(ranks, ranking)
        values.append(avg_rank(ranks, relevant))
    # ... the mean Avg Rank over the enumeration is (n + 1) / 2 ...
    assert np.mean(values) == pytest.approx(2.5)
    # ... and a constant scorer's tie-breaks draw every one of the 24 rankings about
    # equally often (100 expected each: 4 standard deviations is about 39), so its
    # expected Avg Rank is the enumeration's mean.
    draws = [tuple(rank_documents(np.zeros(4), offsets, np.random.default_rng(s))) for s in range(2400)]
    counts = Counter(draws)
    assert set(counts) == {tuple(r) for r in permutations}
    assert max(abs(c - 100) for c in counts.values()) < 4 * np.sqrt(100 * (1 - 1 / 24))
    assert np.mean([avg_rank(np.array(d), relevant) for d in draws]) == pytest.approx(np.mean(values), abs=0.05)


def test_evaluate_and_validation_estimate_rank_as_rank_documents():
    # Two queries, a linear scorer on one feature: hand-computed ranks [2, 1, 3 | 1, 2].
    X = np.array([[0.5], [0.9], [0.1], [2.0], [-1.0]])
    queries = SimpleNamespace(X=X, offsets=np.array([0, 3, 5]))
    relevant = np.array([True, False, True, False, True])
    scorer = LinearScorer(np.array([1.0]))
    ranks = np.array([2, 1, 3, 1, 2])
    metrics = evaluate(scorer, queries, relevant, rng=np.random.default_rng(0), dcg_base=np.e)
    assert metrics["avg_rank"] == pytest.approx((2 + 3 + 2) / 3)
    assert metrics["avg_dcg"] == pytest.approx(avg_dcg(ranks, relevant))
    assert evaluate(scorer, queries, relevant, rng=np.random.default_rng(0), dcg_base=2)["avg_dcg"] == pytest.approx(
        avg_dcg(ranks, relevant, base=2)
    )
    assert metrics["ndcg@10"] == pytest.approx(ndcg_at_k(ranks, relevant, queries.offsets, k=10, queries="all"))
    assert metrics["ndcg@10_relevant_queries"] == pytest.approx(
        ndcg_at_k(ranks, relevant, queries.offsets, k=10, queries="relevant")
    )
    log = ClickLog(
        query=np.array([0, 0, 1]),
        doc=np.array([0, 1, 4]),
        rank=np.array([1, 2, 2]),
        propensity=np.array([0.5, 1.0, 0.25]),
        pass_index=np.zeros(3, dtype=np.int64),
        n_passes=1,
        n_queries=2,
    )
    expected = (2 * dcg_gain(2) + 1 * dcg_gain(1) + 4 * dcg_gain(2)) / 7  # SNIPS: weights 1/q
    assert validation_estimate(scorer, queries, log, rng=np.random.default_rng(0), dcg_base=np.e) == pytest.approx(
        expected
    )


@pytest.mark.letor
def test_trec_run_and_its_ndcg_agree_with_ir_measures_on_mq2008(tmp_path, invoke, mq2008):
    """cltr's TREC run of MQ2008 Fold 1 test and cltr's nDCG@10 held to ir-measures (its
    pytrec_eval, i.e. trec_eval's ndcg_cut_10) per query, on qrels binarized at the
    dataset's threshold (label 2). trec_eval breaks score ties by docid, cltr by a seeded
    permutation: the run's ranks are given to ir-measures as scores -rank (the scores are
    checked to be non-increasing in rank, so that is a tie-break of them)."""
    ir_measures = pytest.importorskip("ir_measures", reason="ir-measures is in the test extra")
    from cltr.core.seeds import stream
    from cltr.data.svmlight import load_svmlight_split
    from cltr.pipeline.models import scorer_from_arrays
    from cltr.pipeline.workspace import Workspace

    invoke("prepare", "letor", "--mq2008", mq2008, "--fold", 1, workdir=tmp_path)
    invoke("simulate", "--dataset", "letor", "--passes", 5, workdir=tmp_path)
    invoke("train", "svm-rank", "--dataset", "letor", "-C", 1, workdir=tmp_path)
    invoke("evaluate", "--dataset", "letor", workdir=tmp_path)
    workspace = Workspace(tmp_path)
    model = workspace.load("letor", "models", workspace.current("letor")["models"])
    evaluation = next(workspace.load("letor", "evaluations", k).info for k in workspace.keys("letor", "evaluations"))
    test_file = mq2008 / "Fold1" / "test.txt.xz"
    invoke("score", test_file, "--model", model.key, "--trec", tmp_path / "run.txt", workdir=tmp_path)

    test, _ = load_svmlight_split(test_file, n_features=46)
    relevant = test.labels >= 2
    qrels = [
        ir_measures.Qrel(str(test.qid[q]), str(test.docid[d]), int(relevant[d]))
        for q in range(test.n_queries)
        for d in range(test.offsets[q], test.offsets[q + 1])
    ]
    rows = [line.split() for line in (tmp_path / "run.txt").read_text().splitlines()]
    assert len(rows) == test.n_docs and {r[1] for r in rows} == {"Q0"}
    by_query = {}
    for qid, _, docid, rank, score, _ in rows:
        by_query.setdefault(qid, []).append((int(rank), float(score), docid))
    for qid, entries in by_query.items():
        entries.sort()
        assert [r for r, _, _ in entries] == list(range(1, len(entries) + 1)), qid
        assert all(a[1] >= b[1] for a, b in itertools.pairwise(entries)), qid  # scores non-increasing in rank
    run = [
        ir_measures.ScoredDoc(qid, docid, -float(rank))
        for qid, entries in by_query.items()
        for rank, _, docid in entries
    ]
    theirs = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.nDCG @ 10], qrels, run)}
    assert len(theirs) == test.n_queries == 156

    # cltr's own ranking of the test split (evaluate's tie-breaks) is the run's
    ranks = rank_documents(scorer_from_arrays(model.arrays).scores(test.X), test.offsets, stream(0, "evaluate"))
    run_rank = {(qid, docid): rank for qid, entries in by_query.items() for rank, _, docid in entries}
    assert all(run_rank[str(test.qid[test.doc_query[d]]), str(test.docid[d])] == ranks[d] for d in range(test.n_docs))
    ours = ndcg_per_query(ranks, relevant, test.offsets, k=10)
    for q in range(test.n_queries):
        expected = 0.0 if np.isnan(ours[q]) else ours[q]
        assert theirs[str(test.qid[q])] == pytest.approx(expected, abs=1e-9), test.qid[q]
    assert int(np.isnan(ours).sum()) == 93  # queries without a label-2 document
    mean_all = float(np.mean(list(theirs.values())))
    mean_relevant = float(np.mean([theirs[str(test.qid[q])] for q in range(test.n_queries) if not np.isnan(ours[q])]))
    assert evaluation["ndcg@10"] == pytest.approx(mean_all, abs=1e-9)
    assert evaluation["ndcg@10_relevant_queries"] == pytest.approx(mean_relevant, abs=1e-9)


def test_ndcg_cuts_at_10_by_default():
    # one query of 12 documents whose only relevant one is ranked 11th: nothing within the
    # default cut-off of 10 (a default of 11 would score it)
    ranks = np.arange(1, 13)
    relevant = ranks == 11
    offsets = np.array([0, 12])
    assert ndcg_per_query(ranks, relevant, offsets)[0] == 0.0
    assert ndcg_at_k(ranks, relevant, offsets, queries="all") == 0.0
    assert ndcg_per_query(ranks, relevant, offsets, k=11)[0] == pytest.approx(1 / np.log2(12))


@pytest.mark.parametrize("offsets", [[1, 3], [0, 3, 2, 3]], ids=["not-from-0", "decreasing"])
def test_rank_documents_refuses_offsets_that_do_not_rise_from_0(compiled, offsets):
    # the compiled ranking would read and write past a query's rows (numba checks no
    # bounds), and its ranks of a row before offsets[0] would be left unset
    from cltr.core import kernels

    kernels.enabled()
    with pytest.raises(ValueError, match="offsets must rise from 0"):
        rank_documents(np.arange(3.0), np.array(offsets), np.random.default_rng(0))
