"""The compiled (numba) hinge kernels against the pure-numpy computation they replace (issue 27)."""

import subprocess
import sys

import numpy as np
import pytest

from cltr.core import kernels
from cltr.core.clicks import Clicks
from cltr.core.objectives import SortHint, hinge_rank_bound, risk, risk_gradient
from cltr.core.queries import Dataset
from cltr.core.ranking import rank_documents
from cltr.methods import TrainingData, train

numba = pytest.importorskip("numba")

TOLERANCE = 1e-12


def problem(rng, *, one_document=False, ties=False, shift=0.0):
    """Random queries, some empty (or all of one document), clicks only in non-empty ones."""
    n_queries = int(rng.integers(1, 7))
    sizes = np.ones(n_queries, dtype=np.int64) if one_document else rng.integers(0, 8, n_queries)
    sizes[rng.integers(n_queries)] = max(1, sizes[0])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    n_docs = int(offsets[-1])
    scores = (rng.integers(-2, 3, n_docs).astype(float) if ties else rng.normal(0.0, 1.5, n_docs)) + shift
    filled = np.flatnonzero(sizes)
    click_query = np.repeat(filled, rng.integers(0, 4, len(filled)))
    if not len(click_query):
        click_query = filled[:1]
    click_doc = offsets[click_query] + rng.integers(0, sizes[click_query])
    return scores, offsets, click_query, click_doc


def both(monkeypatch, call, *args, **kwargs):
    """``call(*args, **kwargs)`` by the numpy oracle (CLTR_NO_NUMBA=1), then by the compiled kernels."""
    monkeypatch.setenv("CLTR_NO_NUMBA", "1")
    assert not kernels.enabled()
    oracle = call(*args, **kwargs)
    monkeypatch.delenv("CLTR_NO_NUMBA")
    assert kernels.enabled()
    return oracle, call(*args, **kwargs)


def assert_agree(compiled, oracle, scale=None):
    """Within 1e-12 relative to each entry or to the largest one (a sum of signed weights may cancel)."""
    oracle, compiled = np.asarray(oracle, dtype=float), np.asarray(compiled, dtype=float)
    scale = np.abs(oracle).max(initial=0.0) if scale is None else scale
    np.testing.assert_allclose(compiled, oracle, rtol=TOLERANCE, atol=TOLERANCE * scale)


CASES = [{}, {"ties": True}, {"one_document": True}, {"ties": True, "one_document": True}, {"shift": 1e3}]


@pytest.mark.parametrize("case", CASES, ids=lambda case: "-".join(case) or "normal")
def test_compiled_gradient_risk_and_curvature_equal_numpy(monkeypatch, case):
    for seed in range(40):
        rng = np.random.default_rng(seed)
        scores, offsets, click_query, click_doc = problem(rng, **case)
        n = len(click_doc)
        signed = seed % 2 == 1  # the affine correction's weights, of either sign
        clicks = (
            Clicks(click_query, click_doc, rng.normal(size=n))
            if signed
            else Clicks.from_propensity(click_query, click_doc, rng.uniform(0.05, 1.0, n))
        )
        candidate = rng.random(len(scores)) < 0.7 if seed % 4 == 2 else None
        weight = ["dcg", "rbp:0.7", "avgrank"][seed % 3]

        oracle, compiled = both(
            monkeypatch, risk_gradient, scores, offsets, clicks, weight, candidate=candidate, with_curvature=True
        )
        magnitude = risk(
            scores, offsets, Clicks(click_query, click_doc, np.abs(clicks.cost)), weight, candidate=candidate
        )
        assert_agree(compiled[0], oracle[0], scale=abs(magnitude))
        assert_agree(compiled[1], oracle[1])
        assert_agree(compiled[2], oracle[2])
        assert np.all(compiled[2] >= np.abs(compiled[1]) - TOLERANCE * np.abs(compiled[2]).max(initial=0.0))
        bounds = both(monkeypatch, hinge_rank_bound, scores, offsets, clicks, candidate=candidate)
        assert_agree(bounds[1], bounds[0])


def test_kernels_without_examples_or_with_only_empty_candidate_sets(monkeypatch):
    scores, offsets = np.array([0.5, -1.0, 2.0]), np.array([0, 0, 3, 3])
    none = np.zeros(0, dtype=np.int64)
    oracle, compiled = both(
        monkeypatch, risk_gradient, scores, offsets, Clicks(none, none, np.ones(0)), "dcg", n=1, with_curvature=True
    )
    assert compiled[0] == oracle[0] == 0.0 and not compiled[1].any() and not compiled[2].any()
    # the clicked document is no candidate and neither is any other: bound 1, no pair
    click = Clicks(np.array([1]), np.array([1]), np.ones(1))
    oracle, compiled = both(
        monkeypatch,
        risk_gradient,
        scores,
        offsets,
        click,
        "dcg",
        candidate=np.zeros(3, dtype=bool),
        with_curvature=True,
    )
    assert compiled[0] == pytest.approx(oracle[0], rel=TOLERANCE) and not compiled[1].any()


def test_no_numba_switch_keeps_the_kernels_out(monkeypatch):
    def refuse(*_, **__):
        raise AssertionError("the compiled kernels ran although CLTR_NO_NUMBA=1")

    monkeypatch.setattr(kernels, "hinges", refuse)
    monkeypatch.setenv("CLTR_NO_NUMBA", "1")
    scores, offsets, click_query, click_doc = problem(np.random.default_rng(0))
    clicks = Clicks(click_query, click_doc, np.ones(len(click_doc)))
    risk_gradient(scores, offsets, clicks, "dcg")
    monkeypatch.setenv("CLTR_NO_NUMBA", "0")
    with pytest.raises(AssertionError, match="compiled kernels ran"):
        risk_gradient(scores, offsets, clicks, "dcg")


def test_importing_the_objectives_does_not_import_numba():
    code = "import sys, cltr.core.objectives, cltr.core.mlp; assert 'numba' not in sys.modules, 'numba imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_whole_tree_propdcg_fit_gives_the_same_scores_either_way(monkeypatch, toy_queries, toy_log):
    queries = toy_queries([12] * 6, n_features=3, seed=2)
    rng = np.random.default_rng(3)
    query = np.repeat(np.arange(6), 5)
    doc = queries.offsets[query] + rng.integers(0, 12, size=len(query))
    log = toy_log(query, doc, propensity=rng.uniform(0.1, 1.0, size=len(query)), n_queries=6)
    data = TrainingData(Dataset("toy", queries, queries, queries, relevant_from=1), log, log, seed=0)
    options = {"learning_rate": 0.3, "num_leaves": 4, "n_estimators": 15}
    oracle, compiled = both(monkeypatch, lambda: train("tree-propdcg", data, options)[0].scores(queries.X))
    assert np.ptp(oracle) > 0
    np.testing.assert_allclose(compiled, oracle, rtol=0, atol=1e-10)


# --------------------------------------------------------------------------- the SVM solver's pair passes


def pair_problem(rng, *, ties: bool, candidate: bool):
    """A PairwiseProblem of random queries (some without clicks, some clicked documents
    clicked twice), its per-document weights (some zero: runs left out of a solve) and
    per-row scores and changes along a ray; integer values when ``ties`` (slacks and slopes
    exactly 0, the kink's own rule)."""
    from cltr.core.svm import PairwiseProblem

    sizes = rng.integers(1, 9, int(rng.integers(2, 8)))
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    n_docs = int(offsets[-1])
    X = rng.normal(size=(n_docs, 3))
    click_query = rng.integers(0, len(sizes), int(rng.integers(1, 20)))
    click_doc = offsets[click_query] + rng.integers(0, sizes[click_query])
    mask = rng.random(n_docs) < 0.7 if candidate else None
    problem = PairwiseProblem(X, offsets, click_query, click_doc, candidate=mask)
    weight = problem.doc_weight(rng.uniform(0.5, 3.0, len(click_doc)), 2.0)
    weight[rng.random(len(weight)) < 0.2] = 0.0
    n_rows = problem.X_used.shape[0]
    draw = (lambda: rng.integers(-2, 3, n_rows).astype(float)) if ties else (lambda: rng.normal(0.0, 1.5, n_rows))
    return problem, weight, draw


@pytest.mark.parametrize("ties", [False, True], ids=["continuous", "ties"])
@pytest.mark.parametrize("candidate", [False, True], ids=["all", "candidates"])
def test_compiled_pair_passes_equal_the_numpy_passes_through_a_sequence_of_steps(ties, candidate):
    """reset, scan, the line search's breakpoints and advance, twice over, by ``_CompiledPairs``
    (per-row scores, slacks computed on the fly) and by ``_Pairs`` (per-pair arrays): every
    returned value within 1e-12, the breakpoints as a set."""
    from cltr.core.svm.pairs import _CompiledPairs, _Pairs

    for seed in range(12):
        rng = np.random.default_rng(seed)
        problem, weight, draw = pair_problem(rng, ties=ties, candidate=candidate)
        oracle, compiled = _Pairs(problem, weight), _CompiledPairs(problem, weight)
        assert compiled.n_pairs == oracle.n_pairs
        if oracle.n_pairs == 0:
            continue
        assert_agree(compiled.total_weight, oracle.total_weight)
        scores = draw()
        assert_agree(compiled.reset(scores), oracle.reset(scores))
        for _ in range(2):
            change = draw()
            assert_agree(compiled.scan(change), oracle.scan(change))
            # bracket ends midway between breakpoints: the two keep the slacks in different
            # roundings, which may put a breakpoint lying on an end on either side of it
            quotient = np.unique(np.abs(oracle.slack / np.where(oracle.slope == 0.0, 1.0, oracle.slope)))
            middle = np.concatenate([(quotient[:-1] + quotient[1:]) / 2, [quotient[-1] + 0.25]])
            low, high = float(middle[len(middle) // 3]), float(middle[2 * len(middle) // 3])
            for bracket in [(0.0, np.inf), (low, high), (0.0, high)]:
                with np.errstate(divide="ignore", invalid="ignore"):  # as the solver's line search
                    want = oracle.breaks(*bracket)
                got = compiled.breaks(*bracket)
                assert_agree(got[:2], want[:2], scale=max(abs(want[0]), abs(want[1]), 1.0))
                finite = np.isfinite(want[2]) & (want[3] > 0)  # numpy keeps k = inf of jump 0 when high = inf
                # equal breakpoints (ties) in the same order: by breakpoint to 9 digits, then jump
                order = np.lexsort((want[3][finite], np.round(want[2][finite], 9)))
                mine = np.lexsort((got[3], np.round(got[2], 9)))
                assert_agree(got[2][mine], want[2][finite][order])
                assert_agree(got[3][mine], want[3][finite][order])
            k, cut = float(rng.uniform(0.0, 1.0)), float(rng.uniform(0.0, 0.2))
            (b_want, coef_want), (b_got, coef_got) = oracle.advance(k, cut), compiled.advance(k, cut)
            assert_agree(b_got, b_want)
            assert_agree(coef_got, coef_want)


def test_compiled_hinge_sums_equal_numpy_and_count_nan(monkeypatch):
    """The objective's hinge sums per clicked document, compiled and numpy; a NaN score
    makes its runs' sums NaN either way (the solver's check of X relies on it)."""
    for seed in range(10):
        rng = np.random.default_rng(seed)
        problem, _, draw = pair_problem(rng, ties=seed % 2 == 0, candidate=seed % 3 == 0)
        scores = draw()
        oracle, compiled = both(monkeypatch, problem._hinge_sums, scores)
        assert_agree(compiled, oracle)
    scores[problem.negative[:1]] = np.nan
    oracle, compiled = both(monkeypatch, problem._hinge_sums, scores)
    np.testing.assert_array_equal(np.isnan(compiled), np.isnan(oracle))
    assert np.isnan(compiled).any()


@pytest.mark.parametrize("C", [0.1, 100.0])
def test_a_whole_solve_and_ccp_agree_either_way(monkeypatch, C):
    """The solver and a CCP run with and without numba: the same certified objective within
    the solver's tolerance (the paths differ only in the order of sums)."""
    from cltr.core.ccp import propdcg_ccp
    from cltr.core.objectives import rank_weight
    from cltr.core.svm import solve_pairwise_svm

    rng = np.random.default_rng(3)
    sizes = rng.integers(3, 12, 40)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    X = rng.normal(size=(int(offsets[-1]), 5)).astype(np.float32)
    click_query = rng.integers(0, len(sizes), 300)
    click_doc = offsets[click_query] + rng.integers(0, sizes[click_query])
    propensity = rng.uniform(0.1, 1.0, len(click_doc))
    oracle, compiled = both(
        monkeypatch, solve_pairwise_svm, X, offsets, click_query, click_doc, 1.0 / propensity, C, tol=1e-6
    )
    assert oracle.converged and compiled.converged
    assert abs(compiled.objective - oracle.objective) <= 2e-6 * oracle.objective
    oracle, compiled = both(
        monkeypatch,
        propdcg_ccp,
        X,
        offsets,
        click_query,
        click_doc,
        propensity,
        C,
        rank_weight("dcg"),
        inner_tol=1e-6,
        tol=1e-8,
    )
    assert abs(compiled.objective - oracle.objective) <= 1e-5 * abs(oracle.objective)


def ranked_afresh(scores, offsets, seed):
    """``rank_documents`` with a tie-breaking generator of its own (``both`` calls it twice)."""
    return rank_documents(scores, offsets, np.random.default_rng(seed))


@pytest.mark.parametrize("case", CASES, ids=lambda case: "-".join(case) or "normal")
def test_compiled_ranks_equal_the_lexsort(monkeypatch, case):
    # a total order (query, descending score, tie-break permutation): the same ranks, with
    # ties, -0.0 beside 0.0, empty and one-document queries, and a constant scorer
    for seed in range(40):
        rng = np.random.default_rng(seed)
        scores, offsets, _, _ = problem(rng, **case)
        scores[rng.random(len(scores)) < 0.2] = 0.0
        scores[rng.random(len(scores)) < 0.2] = -0.0
        if seed % 10 == 0:
            scores[:] = 1.5
        kernels.enabled()  # numba imported: rank_documents may take the kernel
        oracle, compiled = both(monkeypatch, ranked_afresh, scores, offsets, seed)
        np.testing.assert_array_equal(compiled, oracle)
        assert kernels.loaded()


def test_ranking_imports_numba_only_where_it_is_loaded_already():
    # a one-shot `cltr evaluate` does not pay numba's import for its ranking
    code = (
        "import sys, numpy as np; from cltr.core.ranking import rank_documents; "
        "rank_documents(np.arange(5.0), np.array([0, 2, 5]), np.random.default_rng(0)); "
        "print('numba' in sys.modules)"
    )
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )


# --------------------------------------------------------------------------- the sort hint


def hint_problem(rng):
    """Queries of up to 60 documents, ties, -0.0 and NaN among the scores, candidates or not."""
    sizes = rng.integers(0, 60, int(rng.integers(1, 12)))
    sizes[0] = max(sizes[0], 1)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n_docs = int(offsets[-1])
    scores = rng.normal(size=n_docs)
    if rng.random() < 0.5:
        scores = np.round(scores * 2) / 2  # many ties
    scores[rng.random(n_docs) < 0.1] = -0.0
    if rng.random() < 0.3:
        scores[rng.random(n_docs) < rng.choice([0.05, 0.3])] = np.nan
    candidate = rng.random(n_docs) < 0.7 if rng.random() < 0.4 else None
    allowed = np.ones(n_docs, dtype=bool) if candidate is None else candidate
    docs = np.flatnonzero(allowed)
    if not len(docs):
        docs = np.arange(1)
        candidate = None
    click_doc = rng.choice(docs, size=int(rng.integers(1, 40)))
    click_query = (np.searchsorted(offsets, click_doc, side="right") - 1).astype(np.int64)
    return scores, offsets, click_query, click_doc.astype(np.int64), candidate


def assert_same(a, b):
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)  # NaN equal to NaN, bit for bit otherwise


def test_a_sort_hint_changes_nothing_whatever_it_holds():
    """Sorting from a hint (the last order, a scrambled one, one of another problem, one of the
    wrong length) gives exactly the order and the hinges of sorting afresh: the stable sort's
    order, ties and NaNs (last) by document."""
    for seed in range(300):
        rng = np.random.default_rng(seed)
        scores, offsets, click_query, click_doc, candidate = hint_problem(rng)
        before = kernels.hinges(scores, offsets, click_query, click_doc, candidate)
        moved = scores + rng.normal(0.0, [0.01, 0.3, 5.0][seed % 3], len(scores))  # a tree's step, or a jump
        if seed % 2:
            moved = np.round(moved * 2) / 2  # ties again
            moved[rng.random(len(moved)) < 0.1] = -0.0
        afresh = kernels.hinges(moved, offsets, click_query, click_doc, candidate)
        order = before[0]
        other = hint_problem(np.random.default_rng(seed + 1000))[2]
        for hint in (
            order,
            rng.permutation(order),
            order[::-1].copy(),
            order[:-1].copy(),
            np.concatenate([order, order]),
            np.full_like(order, len(scores) + 5),
            order * 0,
            other,
        ):
            assert_same(kernels.hinges(moved, offsets, click_query, click_doc, candidate, hint=hint), afresh)
        if candidate is None:
            # each query ordered by (score, document), NaN last
            for q in range(len(offsets) - 1):
                part = list(afresh[0][offsets[q] : offsets[q + 1]])
                nan = np.isnan(moved)
                assert part == sorted(part, key=lambda d: (nan[d], 0.0 if nan[d] else moved[d], d))


def test_a_sort_hint_passed_to_every_call_follows_the_scores_and_changes_no_result(monkeypatch):
    rng = np.random.default_rng(5)
    sizes = rng.integers(5, 80, 40)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n_docs = int(offsets[-1])
    click_doc = rng.integers(0, n_docs, 300)
    click_query = np.searchsorted(offsets, click_doc, side="right") - 1
    clicks = Clicks(click_query, click_doc, rng.uniform(1.0, 10.0, 300))
    hint = SortHint()
    scores = np.zeros(n_docs)
    for _ in range(30):
        with_hint = risk_gradient(scores, offsets, clicks, "dcg", with_curvature=True, hint=hint)
        without = risk_gradient(scores, offsets, clicks, "dcg", with_curvature=True)
        assert with_hint[0] == without[0]
        np.testing.assert_array_equal(with_hint[1], without[1])
        np.testing.assert_array_equal(with_hint[2], without[2])
        assert hint.order is not None and sorted(hint.order) == list(range(n_docs))
        scores = scores - 0.1 * with_hint[1] / (with_hint[2] + 1e-9) + rng.normal(0, 0.01, n_docs)
    monkeypatch.setenv("CLTR_NO_NUMBA", "1")  # the numpy version takes the hint and leaves it be
    kept = hint.order.copy()
    risk_gradient(scores, offsets, clicks, "dcg", hint=hint)
    np.testing.assert_array_equal(hint.order, kept)


def test_a_good_hint_replaces_the_sort_and_a_bad_one_falls_back(monkeypatch):
    """The kernel's own Python (numba compiles the same source) with numpy's argsort counted:
    from the last order at slightly moved scores no query is sorted afresh; from a reversed
    order, past the move budget, every query of more than a few documents is."""
    rng = np.random.default_rng(11)
    sizes = rng.integers(30, 60, 8)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n_docs = int(offsets[-1])
    click_doc = rng.integers(0, n_docs, 40).astype(np.int64)
    click_query = (np.searchsorted(offsets, click_doc, side="right") - 1).astype(np.int64)
    scores = rng.normal(size=n_docs)
    no_mask, none = np.ones(0, dtype=np.bool_), np.zeros(0, dtype=np.int64)
    order = kernels._hinges_kernel(scores, offsets, click_query, click_doc, no_mask, False, none, False)[0]
    moved = scores + rng.normal(0.0, 1e-3, n_docs)
    sorts = []
    real = np.argsort
    monkeypatch.setattr(np, "argsort", lambda a, **kw: sorts.append(len(a)) or real(a, **kw))
    afresh = kernels._hinges_kernel(moved, offsets, click_query, click_doc, no_mask, False, none, False)
    assert len(sorts) == len(sizes)
    sorts.clear()
    hinted = kernels._hinges_kernel(moved, offsets, click_query, click_doc, no_mask, False, order, True)
    assert sorts == []  # every query from the hint
    reversed_ = kernels._hinges_kernel(moved, offsets, click_query, click_doc, no_mask, False, order[::-1].copy(), True)
    assert len(sorts) == len(sizes)  # the reversed hint is no permutation of each query's documents
    sorts.clear()
    backwards = np.concatenate([order[offsets[q] : offsets[q + 1]][::-1] for q in range(len(sizes))])
    kernels._hinges_kernel(moved, offsets, click_query, click_doc, no_mask, False, backwards, True)
    assert len(sorts) == len(sizes)  # each query's own documents, but past the budget of moves
    for got in (hinted, reversed_):
        assert_same(got, afresh)
