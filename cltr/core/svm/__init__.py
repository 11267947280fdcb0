"""The weighted pairwise linear SVM behind SVM Rank, SVM PropRank and every CCP step of SVM PropDCG.

Legend (paper Sec. 4.1, the propensity-weighted Ranking SVM of Joachims et al. 2017):
    w                        -> ``w``, the linear scorer f(x, y) = w . phi(x, y)
    phi(x_i, y)              -> ``X[y]`` (documents stored once, grouped by query via ``offsets``)
    C, n                     -> ``C``, number of examples (clicks) ``len(click_doc)``
    c_i (1, 1/q_i or 1/q'_i) -> ``cost[i]``
    y_i                      -> ``click_doc[i]``
    Y_i                      -> rows of query ``click_query[i]`` (where ``candidate``), minus y_i
    xi_iy                    -> the hinge max(0, 1 - w.(x_{y_i} - x_y)) of pair (i, y)

Primal and dual (a_i = C c_i / n, d_iy = x_{y_i} - x_y):

    P(w) = ½‖w‖² + Σ_(i,y) a_i max(0, 1 - w.d_iy)
    D(α) = Σ α_iy - ½‖Σ α_iy d_iy‖²,   0 <= α_iy <= a_i,   and D(α) <= min P <= P(w).

Solver: OCAS (Franc & Sonnenburg, "Optimized cutting plane algorithm for large-scale risk
minimization", JMLR 2009). For any δ in [0, 1]^pairs, R(w) = Σ a_i max(0, 1 - w.d_iy) is
at least the plane b - g.w with b = Σ a_i δ_iy and g = Σ a_i δ_iy d_iy; δ = [w_t.d_iy < 1]
makes it touch R at w_t. Each iteration

1. minimises ½‖w‖² + max(0, max_t b_t - g_t.w) over the planes so far: a tiny QP, solved
   in its dual max_{β in simplex} Σ β_t b_t - ½‖Σ β_t g_t‖² by a primal active-set method
   whose Cholesky factor is updated as planes enter and leave (``_PlaneQP``); its solution
   is w_cp = Σ β_t g_t;
2. moves the best point w_b to the exact minimiser of P on the ray w_b + k (w_cp - w_b),
   k >= 0: P is piecewise quadratic along it, so with the margins' change along it (one
   X @ (w_cp - w_b))
   the minimiser follows from the breakpoints near it, which a fixed sample of the pairs
   locates before one pass collects them;
3. adds the plane at w_c = 0.9 w_b + 0.1 w_cp (one X.T @ coef, where coef aggregates the
   pair coefficients per document, so each document's features are read once).

The margins at w_c follow from those at w_b and w_cp without a product, and the pair
passes sweep blocks of pairs small enough to stay in cache.

The certificate: α_iy = a_i Σ_t β_t δ^t_iy lies in the dual box and D(α) equals the reduced
dual value, so ``lower_bound`` is a dual value of the full problem and
``(objective - lower_bound) / objective`` a certified relative duality gap. Examples with
the same clicked document (the candidate set follows from it) are merged by adding their
costs, which leaves P unchanged; with many passes of clicks this shrinks the pairs a lot.

Inside the loop every product is a float32 product (X.T @ coef summed in float64 over
blocks of rows): with float32 X on X itself, never copied whole; with float64 X on a float32
copy of the rows the solver reads, made once per problem (half the bytes per product: about
5x faster on the embedded default; none beyond 1 GiB of X_used, for features beyond ±1e4, or
where weights times row norms could leave float32's range; where a first steered plane
overflows all the same, exact products from the start). The scores only steer the search,
and the planes they give are slightly off, so their QP values are estimates. What is returned is exact: once the
estimates say done, one pass computes P(w_b) and D(α) for the final β with exact products
(float64 X as it is; float32 X widened to float64 a block of rows at a time, its values
exact there), from the planes' stored per-document coefficients (Σ_t β_t g_t = X.T @ Σ_t
β_t coef_t). If that gap misses ``tol``, or the estimates stop making progress (no 1%
smaller gap in 10 iterations), the solver goes on with exact products only, from one exact
plane that aggregates the old ones (a convex combination of planes is a plane).

This package imports only numpy and scipy; it never prints or reads files (progress is a
callback).

The package, in the order its modules build on each other: ``problem`` (the result type, input
checks, products with X, the pairs' layout), ``pairs`` (the pair passes and the line search),
``qp`` (the cutting-plane QP) and ``ocas`` (``PairwiseProblem``, the solver and the paper's
two uses of it).
"""

# the public names, and (each imported as itself) the private ones chunked.py and the tests use
from cltr.core.svm.ocas import (
    PairwiseProblem,
    pairwise_objective,
    solve_pairwise_svm,
    solver_info,
    train_ranking_svm,
    train_svm_on_clicks,
)
from cltr.core.svm.pairs import _active_slope as _active_slope
from cltr.core.svm.pairs import _line_root as _line_root
from cltr.core.svm.pairs import _Pairs as _Pairs
from cltr.core.svm.problem import SVMResult
from cltr.core.svm.problem import _check_cost as _check_cost
from cltr.core.svm.problem import _check_inputs as _check_inputs
from cltr.core.svm.problem import _check_point as _check_point
from cltr.core.svm.problem import _products as _products
from cltr.core.svm.qp import _PlaneQP as _PlaneQP

__all__ = [
    "SVMResult",
    "PairwiseProblem",
    "pairwise_objective",
    "solve_pairwise_svm",
    "train_ranking_svm",
    "train_svm_on_clicks",
    "solver_info",
]
