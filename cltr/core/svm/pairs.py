"""The pair passes of one OCAS solve (``_Pairs``: slacks at the best point, the exact line
search along the ray, the next cutting plane) and the line search's root (``_line_root``).
The notation is the package's (``cltr.core.svm``)."""

from __future__ import annotations

import numpy as np

from cltr.core import kernels
from cltr.core.svm.problem import _blocks

_SAMPLE = 4096  # pairs sampled to bracket the line search's root
_FEW_BREAKS = 2048  # below this many candidate breakpoints the line search simply sorts them


def _active_slope(slack, slope, weight, work) -> float:
    """Σ_p a_p slope_p over the pairs in the hinge just after k = 0: slack_p > 0, or on the
    kink (slack_p = 0) and moving into the hinge (slope_p < 0)."""
    product, active, tied = work
    np.greater(slack, 0.0, out=active)
    np.equal(slack, 0.0, out=tied)
    if tied.any():
        tied &= slope < 0.0
        active |= tied
    np.multiply(weight, active, out=product)
    return float(np.einsum("i,i->", product, slope))


def _weighted_runs(problem, doc_weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The runs of a solve, those of positive weight with at least one pair: their pair counts,
    their pairs' other rows, their own rows and their weights."""
    keep = (doc_weight > 0) & (problem.count > 0)
    negative = problem.negative
    if not keep[problem.count > 0].all():
        negative = negative[np.repeat(keep, problem.count)]
    return problem.count[keep], negative, problem.run_row[keep], doc_weight[keep]


class _Pairs:
    """The pairs of positive weight of a ``PairwiseProblem`` for one solve, with their slack
    1 - w_b.d_p at the best point w_b.

    Pairs are swept in blocks of whole runs of about ``_BLOCK_PAIRS`` pairs, so that a
    block's slack, slope and scratch stay in cache from one operation to the next; a run's
    positive document is one score repeated, never a gather. Pair-length arrays are
    allocated once per solve (fresh temporaries of this size cost more in page faults
    than in arithmetic).
    """

    def __init__(self, problem, doc_weight: np.ndarray):  # problem: a PairwiseProblem (cltr.core.svm.ocas)
        self.count, self.negative, self.run_row, run_weight = _weighted_runs(problem, doc_weight)
        self.run_start = np.cumsum(self.count) - self.count
        self.weight = np.repeat(run_weight, self.count)
        self.X = problem.X_used
        self.n_pairs = n = len(self.negative)
        self.slack = np.ones(n)
        # the slope of each margin along the ray, then the weights a_p δ_p of the new plane
        self.slope = np.zeros(n)
        if n == 0:
            return
        self.blocks = _blocks(self.count)
        size = max(p.stop - p.start for p, _ in self.blocks)
        self.floats = (np.empty(size), np.empty(size))
        self.flags = (np.empty(size, dtype=bool), np.empty(size, dtype=bool))
        # a fixed sample of pairs, to bracket the line search's root before the exact pass
        sample = np.arange(0, n, max(1, n // _SAMPLE))
        self.sample = sample
        self.sample_scale = n / len(sample)

    @property
    def total_weight(self) -> float:
        """Σ_p a_p: the pair loss at w = 0, where every slack is 1."""
        return float(self.weight.sum())

    def _sample(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(slack, slope, weight) of the sampled pairs."""
        return np.take(self.slack, self.sample), np.take(self.slope, self.sample), np.take(self.weight, self.sample)

    def _scratch(self, pairs: slice):
        m = pairs.stop - pairs.start
        return self.floats[0][:m], self.floats[1][:m], self.flags[0][:m], self.flags[1][:m]

    def reset(self, scores: np.ndarray) -> float:
        """Slack at the point of these document scores; returns R = Σ a_p max(0, slack_p)."""
        loss = 0.0
        for pairs, runs in self.blocks:
            first, _, _, _ = self._scratch(pairs)
            slack = self.slack[pairs]
            np.take(scores, self.negative[pairs], out=first)
            np.subtract(first, np.repeat(scores[self.run_row[runs]], self.count[runs]), out=slack)
            slack += 1.0
            np.maximum(slack, 0.0, out=first)
            loss += float(np.einsum("i,i->", self.weight[pairs], first))
        return loss

    def scan(self, change: np.ndarray) -> float:
        """Slopes d_p.(w_cp - w_b) from the change of the document scores; returns φ'(0+)'s
        pair part Σ_{active} a_p slope_p."""
        total = 0.0
        for pairs, runs in self.blocks:
            first, _, active, tied = self._scratch(pairs)
            slope = self.slope[pairs]
            np.take(change, self.negative[pairs], out=first)
            np.subtract(np.repeat(change[self.run_row[runs]], self.count[runs]), first, out=slope)
            total += _active_slope(self.slack[pairs], slope, self.weight[pairs], (first, active, tied))
        return total

    def line_search(self, derivative: float, curvature: float) -> tuple[float, float]:
        """The exact minimiser k >= 0 of φ along the ray (``_line_root``), given φ'(0+) < 0 and
        ‖Δ‖² > 0 and the slopes of ``scan``; returns k and φ(k) - φ(0).

        The root lies below k_hi = -φ'(0+) / ‖Δ‖², but far below it as a rule: the jumps of φ'
        pass 0 first. A sample of the pairs predicts where, so one pass collects only the
        breakpoints around there and sums the jumps before; if the root is not inside after
        all, a pass over the side it is on settles it.
        """
        upper = -derivative / curvature
        low, high = self.bracket(derivative, curvature)
        high = min(high, upper)
        low = min(low, high)
        while True:
            base, moment, breaks, jumps = self.breaks(low, high)
            if low > 0.0 and derivative + low * curvature + base >= 0.0:
                low, high = 0.0, low  # the root is at or below low
            elif high < upper and derivative + high * curvature + base + float(jumps.sum()) < 0.0:
                low, high = high, upper  # the root is above high
            else:
                break
        k = _line_root(derivative + base, curvature, breaks, jumps)
        passed = breaks <= k
        # φ(k) - φ(0) = k φ'(0+) + ½k²‖Δ‖² + Σ_{k_p <= k} jump_p (k - k_p)
        change = (
            k * derivative
            + 0.5 * k * k * curvature
            + k * base
            - moment
            + float(np.einsum("i,i->", jumps[passed], k - breaks[passed]))
        )
        return k, change

    def bracket(self, derivative: float, curvature: float) -> tuple[float, float]:
        """(low, high) around the root as the sample predicts it: its φ' (jumps scaled up)
        crosses 0 at its j-th breakpoint; low and high are 8 + 3√j breakpoints either side."""
        slack, slope, weight = self._sample()
        quotient = slack / slope
        inside = np.flatnonzero(quotient > 0.0)
        order = np.argsort(quotient[inside])
        breaks = quotient[inside][order]
        jumps = np.abs(weight[inside] * slope[inside])[order]
        crossed = np.flatnonzero(derivative + breaks * curvature + self.sample_scale * np.cumsum(jumps) >= 0.0)
        j = int(crossed[0]) if len(crossed) else len(breaks)
        margin = 8 + int(3.0 * np.sqrt(j))
        low = float(breaks[j - margin]) if j >= margin else 0.0
        high = float(breaks[j + margin]) if j + margin < len(breaks) else np.inf
        return low, high

    def breaks(self, low: float, high: float) -> tuple[float, float, np.ndarray, np.ndarray]:
        """The breakpoints in (low, high] with their jumps; before them, the sum of the jumps
        in (0, low] and of jump times breakpoint there."""
        base = moment = 0.0
        found = []
        for pairs, _ in self.blocks:
            quotient, jump, inside, below = self._scratch(pairs)
            slack, slope, weight = self.slack[pairs], self.slope[pairs], self.weight[pairs]
            np.divide(slack, slope, out=quotient)  # 0/0 is NaN and x/0 is ±inf: never inside
            if low > 0.0:
                np.greater(quotient, 0.0, out=inside)
                np.less_equal(quotient, low, out=below)
                inside &= below
                passed = np.flatnonzero(inside)
                np.multiply(weight, slope, out=jump)
                np.abs(jump, out=jump)
                base += float(jump[passed].sum())
                moment += float(np.einsum("i,i->", jump[passed], quotient[passed]))
            np.greater(quotient, low, out=inside)
            np.less_equal(quotient, high, out=below)
            inside &= below
            chosen = np.flatnonzero(inside)
            found.append((quotient[chosen], np.abs(weight[chosen] * slope[chosen])))
        return base, moment, *self._joined(found)

    @staticmethod
    def _joined(found):
        if not found:
            return np.zeros(0), np.zeros(0)
        return np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found])

    def advance(self, k: float, cut: float) -> tuple[float, np.ndarray]:
        """Move w_b by k along the ray, and take the plane where the slack is slack - cut·slope.

        Returns the plane's offset b = Σ a_p δ_p and its per-document coefficients (its
        normal is X_used.T @ coef), with δ_p = [margin < 1] there.
        """
        for pairs, _ in self.blocks:
            first, _, flags, _ = self._scratch(pairs)
            slack, slope = self.slack[pairs], self.slope[pairs]
            if k > 0.0:
                np.multiply(slope, k, out=first)
                slack -= first
            np.multiply(slope, cut, out=first)
            np.less(first, slack, out=flags)
            np.multiply(self.weight[pairs], flags, out=slope)
        per_run = np.add.reduceat(self.slope, self.run_start)
        coef = np.bincount(self.negative, weights=self.slope, minlength=self.X.shape[0])
        np.negative(coef, out=coef)
        coef[self.run_row] += per_run
        return float(per_run.sum()), coef


class _CompiledPairs(_Pairs):
    """``_Pairs`` with numba's passes (``cltr.core.kernels.pairs_*``), which compute each pair's
    slack and slope from the per-row scores at the best point and their change along the ray
    instead of keeping them per pair: a pass reads an index per pair where the numpy passes
    stream four arrays of pair length (a pass is memory-bound either way)."""

    def __init__(self, problem, doc_weight: np.ndarray):
        self.count, self.negative, self.run_row, run_weight = _weighted_runs(problem, doc_weight)
        self.run_weight = np.ascontiguousarray(run_weight, dtype=np.float64)
        self.X = problem.X_used
        self.n_pairs = n = len(self.negative)
        # the scores at the best point (where every slack is 1 at first) and their change along the ray
        self.scores = np.zeros(self.X.shape[0])
        self.change = np.zeros(self.X.shape[0])
        self._found: tuple[np.ndarray, np.ndarray] | None = None
        if n == 0:
            return
        sample = np.arange(0, n, max(1, n // _SAMPLE))
        run_of = np.repeat(np.arange(len(self.count)), self.count)[sample]
        self.sample_negative, self.sample_row = self.negative[sample], self.run_row[run_of]
        self.sample_weight = self.run_weight[run_of]
        self.sample_scale = n / len(sample)

    @property
    def total_weight(self) -> float:
        return float(np.dot(self.run_weight, self.count))

    def _sample(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        slack = (self.scores[self.sample_negative] - self.scores[self.sample_row]) + 1.0
        slope = self.change[self.sample_row] - self.change[self.sample_negative]
        return slack, slope, self.sample_weight

    def reset(self, scores: np.ndarray) -> float:
        np.copyto(self.scores, scores)
        return float(np.dot(self.run_weight, kernels.hinge_sums(self.scores, self.negative, self.run_row, self.count)))

    def scan(self, change: np.ndarray) -> float:
        np.copyto(self.change, change)
        return kernels.pairs_scan(self.scores, self.change, self.negative, self.run_row, self.count, self.run_weight)

    def breaks(self, low: float, high: float) -> tuple[float, float, np.ndarray, np.ndarray]:
        if self._found is None:
            self._found = (np.empty(self.n_pairs), np.empty(self.n_pairs))
        breaks, jumps = self._found
        base, moment, n = kernels.pairs_breaks(
            self.scores, self.change, self.negative, self.run_row, self.count, self.run_weight, low, high, breaks, jumps
        )
        return base, moment, breaks[:n].copy(), jumps[:n].copy()

    def advance(self, k: float, cut: float) -> tuple[float, np.ndarray]:
        offset, coef = kernels.pairs_advance(
            self.scores, self.change, k, cut, self.negative, self.run_row, self.count, self.run_weight, self.X.shape[0]
        )
        if k > 0.0:
            self.scores += k * self.change
        return float(offset), coef


def pairs_of(problem, doc_weight: np.ndarray) -> _Pairs:
    """The pair passes of one solve: compiled where numba serves (``kernels.enabled``), else numpy's."""
    return _CompiledPairs(problem, doc_weight) if kernels.enabled() else _Pairs(problem, doc_weight)


def _line_root(base: float, curvature: float, breaks: np.ndarray, jumps: np.ndarray) -> float:
    """Exact argmin over k >= 0 of φ(k) = ½‖w_b + kΔ‖² + Σ_p a_p max(0, slack_p - k slope_p).

    φ is convex and piecewise quadratic; its right derivative is
    φ'(k) = φ'(0+) + k‖Δ‖² + Σ_{p: 0 < k_p <= k} a_p |slope_p|, jumping at k_p = slack_p / slope_p
    wherever slack_p and slope_p share a sign. Given the breakpoints of a bracket (low, high]
    that holds the root, and ``base`` = φ'(k+) - k‖Δ‖² just above low (φ'(0+) plus the jumps
    at or below low), they are narrowed around the root that a sorted sample of them
    predicts (each round one exact pass; usually one or two rounds) and the few left are
    sorted: O(n_breaks), no full sort.

    Parameters
    ----------
    base, curvature : float
        φ'(k+) - k‖Δ‖² for k just above the bracket's low end, and ‖Δ‖² > 0.
    breaks, jumps : ndarray, shape (n_breaks,)
        The breakpoints in the bracket and the jumps a_p |slope_p| of φ' there.
    """
    if base >= 0.0 or curvature <= 0.0:
        return 0.0
    # base: φ'(k+) - k‖Δ‖² - Σ_{remaining k_p <= k} jumps, for k in the bracket
    while len(breaks) > _FEW_BREAKS:
        stride = max(1, len(breaks) // 256)
        sample_breaks, sample_jumps = breaks[::stride], jumps[::stride]
        order = np.argsort(sample_breaks)
        sample_breaks = sample_breaks[order]
        predicted = base + sample_breaks * curvature + np.cumsum(sample_jumps[order]) * stride
        j = int(np.searchsorted(predicted >= 0.0, True))  # first predicted crossing
        low = float(sample_breaks[max(j - 2, 0)])
        high = float(sample_breaks[min(j + 1, len(sample_breaks) - 1)])
        at_low = breaks <= low
        at_high = breaks <= high
        passed_low = float(jumps[at_low].sum())
        passed_high = float(jumps[at_high].sum())
        if base + low * curvature + passed_low >= 0.0:
            keep = np.flatnonzero(at_low)
        elif base + high * curvature + passed_high >= 0.0:
            base += passed_low
            keep = np.flatnonzero(at_high & ~at_low)
        else:
            base += passed_high
            keep = np.flatnonzero(~at_high)
        if len(keep) == len(breaks):
            break  # ties everywhere: sorting settles it
        breaks, jumps = breaks[keep], jumps[keep]
    order = np.argsort(breaks)
    breaks, jumps = breaks[order], jumps[order]
    after = base + np.cumsum(jumps)  # φ'(k_j+) - k_j ‖Δ‖²
    crossed = np.flatnonzero(after + breaks * curvature >= 0.0)
    if len(crossed) == 0:
        return float(-(after[-1] if len(after) else base) / curvature)
    j = int(crossed[0])
    before = after[j] - jumps[j]
    # the zero lies on the linear piece left of k_j, or φ' jumps across 0 at k_j
    return float(min(breaks[j], -before / curvature))
