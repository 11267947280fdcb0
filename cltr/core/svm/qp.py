"""The cutting-plane QP of OCAS (``_PlaneQP``): its dual over the planes so far, solved by a
primal active-set method on an updated Cholesky factor. The notation is the package's
(``cltr.core.svm``)."""

from __future__ import annotations

import numpy as np

_RIDGE = 1e-12  # the plane QP's ridge, relative to its largest Gram diagonal
_IDLE = 10  # a plane unused (β = 0) for more than this many QP solves in a row is dropped


class _PlaneQP:
    """The cutting planes so far, offsets b (k,) and normals g (k, n_features), and the QP

        min_β ½‖Σ β_t g_t‖² - Σ β_t b_t  over the simplex (β >= 0, Σβ = 1),

    the dual of min_w ½‖w‖² + max(0, max_t b_t - g_t.w); its solution gives w_cp = Σ β_t g_t.

    Plane 0 is R >= 0 (b = 0, g = 0), which turns Σβ <= 1 into the simplex. A plane left out
    of the solution (β = 0) for more than ``_IDLE`` solves in a row is dropped, as OCAS does:
    every value returned stays a valid lower bound, so the certificate is unaffected.

    Primal active set, warm-started from the last β, on the free set F = {t: β_t > 0}. One
    plane p of F (the pivot) is eliminated by Σβ = 1, so the others, S, carry the
    subproblem: with D_t = g_t - g_p, its Hessian is the Gram matrix K = D_S D_Sᵀ. Planes
    are often long and nearly parallel (‖g_t‖ >> ‖Σ β_t g_t‖), so K is built from the
    differences, never from g gᵀ. K's rows are kept for all planes (one product per new
    plane) and its Cholesky factor on S is updated as planes enter S (one triangular solve)
    or leave it (a refactorisation of the trailing block); only a change of pivot refactors
    it whole. A ridge of ``_RIDGE`` times the largest diagonal keeps the factor positive
    definite when planes are affinely dependent: a flat direction then becomes a
    steep-but-bounded Newton step that runs into a bound, as the exact method would.
    """

    def __init__(self, n_features: int, capacity: int = 64, *, keep_coef: bool = False):
        # LAPACK bound here, once per QP, not at the top: scipy.linalg takes a tenth of a second
        # to import and `cltr --help` imports this package through the SVM methods
        from scipy.linalg.lapack import dpotrs, dtrtrs

        self._potrs, self._trtrs = dpotrs, dtrtrs
        self.size = 1
        self.b = np.zeros(capacity)
        self.g = np.zeros((capacity, n_features))
        self.beta = np.zeros(capacity)
        self.beta[0] = 1.0
        self.idle = np.zeros(capacity, dtype=np.int64)
        self.gram = np.zeros((capacity, capacity))  # (g_s - g_p).(g_t - g_p)
        self.largest = 0.0  # the largest diagonal of gram
        self.factor = np.zeros((capacity, capacity))  # lower Cholesky factor of gram[S, S] + ridge
        self.coef: list[np.ndarray | None] | None = [None] * capacity if keep_coef else None
        self.pivot = 0
        self.free: list[int] = []  # S, in the factor's order
        self.solved = True  # whether β minimises the subproblem on F (a new plane leaves F as is)

    def add(self, b: float, g: np.ndarray, coef: np.ndarray | None = None) -> None:
        """A new plane (b, g), with β = 0; ``coef`` (kept when asked for) gives g = X.T @ coef."""
        k = self.size
        if k == len(self.b):
            self._grow()
        self.b[k] = b
        self.g[k] = g
        self.beta[k] = 0.0
        self.idle[k] = 0
        if self.coef is not None:
            self.coef[k] = coef
        difference = g - self.g[self.pivot]
        row = (self.g[:k] - self.g[self.pivot]) @ difference
        self.gram[k, :k] = row
        self.gram[:k, k] = row
        self.gram[k, k] = square = float(difference @ difference)
        self.largest = max(self.largest, square)
        self.size = k + 1

    def _grow(self) -> None:
        k = len(self.b)
        self.b = np.concatenate([self.b, np.zeros(k)])
        self.g = np.concatenate([self.g, np.zeros_like(self.g)])
        self.beta = np.concatenate([self.beta, np.zeros(k)])
        self.idle = np.concatenate([self.idle, np.zeros(k, dtype=np.int64)])
        for name in ("gram", "factor"):
            grown = np.zeros((2 * k, 2 * k))
            grown[:k, :k] = getattr(self, name)
            setattr(self, name, grown)
        if self.coef is not None:
            self.coef += [None] * k

    def _ridge(self) -> float:
        return _RIDGE * max(self.largest, 1e-200)

    def _refactor(self, pivot: int) -> None:
        """Make ``pivot`` the eliminated plane: Gram matrix and factor from scratch."""
        k = self.size
        self.pivot = pivot
        difference = self.g[:k] - self.g[pivot]
        self.gram[:k, :k] = difference @ difference.T
        self.largest = float(self.gram[:k, :k].diagonal().max())
        self.free = [int(t) for t in np.flatnonzero(self.beta[:k] > 0.0) if t != pivot]
        m = len(self.free)
        if m:
            S = np.asarray(self.free)
            self.factor[:m, :m] = np.linalg.cholesky(self.gram[S][:, S] + self._ridge() * np.eye(m))

    def _enter(self, j: int) -> None:
        """Append plane j to S: one row more of the Cholesky factor."""
        m = len(self.free)
        square = self.gram[j, j] + self._ridge()
        if m:
            below, _ = self._trtrs(self.factor[:m, :m], self.gram[self.free, j], lower=1)
            self.factor[m, :m] = below
            square -= float(below @ below)
        self.factor[m, m] = np.sqrt(max(square, self._ridge()))
        self.free.append(j)

    def _leave(self, j: int) -> None:
        """Drop plane j (now β_j = 0) from F."""
        if j == self.pivot:
            # the new pivot is the plane with most weight: it is the least likely to leave
            rest = [t for t in self.free if t != j]
            if rest:
                self._refactor(max(rest, key=lambda t: self.beta[t]))
            return
        i = self.free.index(j)
        m = len(self.free)
        L = self.factor
        trailing = L[i + 1 : m, i + 1 : m] @ L[i + 1 : m, i + 1 : m].T + np.outer(L[i + 1 : m, i], L[i + 1 : m, i])
        L[i : m - 1, :i] = L[i + 1 : m, :i]
        if i < m - 1:
            L[i : m - 1, i : m - 1] = np.linalg.cholesky(trailing)
        L[m - 1, :m] = 0.0
        L[:m, m - 1] = 0.0
        del self.free[i]

    def solve(self, tolerance: float) -> tuple[np.ndarray, float]:
        """β minimising the QP (stop when Σβ_j grad_j - min_j grad_j <= tolerance, or after a
        bounded number of steps: any feasible β certifies a lower bound); returns
        w_cp = Σ β_t g_t and the reduced dual value b.β - ½‖w_cp‖²."""
        k = self.size
        g, b, beta = self.g[:k], self.b[:k], self.beta[:k]
        solved = self.solved
        for _ in range(4 * k + 20):
            w = beta @ g
            gradient = g @ w
            gradient -= b
            if solved or not self.free:
                worst = int(gradient.argmin())
                if float(beta @ gradient) - gradient[worst] <= tolerance or beta[worst] > 0.0:
                    solved = True
                    break
                self._enter(worst)
                solved = False
                continue
            # Newton step on S, β_p taking up the sum, then back to the first bound it crosses
            S, p, m = self.free, self.pivot, len(self.free)
            step, _ = self._potrs(self.factor[:m, :m], gradient[p] - gradient[S], lower=1)
            current = beta[S]
            pivot_step = -float(step.sum())
            tau, blocked = 1.0, None
            if pivot_step < 0.0 and beta[p] < -pivot_step:
                tau, blocked = beta[p] / -pivot_step, p
            falling = step < 0.0
            if falling.any():
                ratios = np.where(falling, current, np.inf) / np.where(falling, -step, 1.0)
                i = int(ratios.argmin())
                if ratios[i] < tau:
                    tau, blocked = float(ratios[i]), S[i]
            beta[S] = np.maximum(current + tau * step, 0.0)
            beta[p] = max(beta[p] + tau * pivot_step, 0.0)
            if blocked is not None:
                beta[blocked] = 0.0
                self._leave(blocked)
            beta /= beta.sum()
            solved = blocked is None
        else:
            w = beta @ g  # out of steps: the last one moved β
        self.solved = solved
        value = float(beta @ b - 0.5 * np.dot(w, w))
        self.idle[:k] += 1
        self.idle[:k][beta > 0.0] = 0
        if self.idle[:k].max() > _IDLE:
            self._prune()
        return w, value

    def _prune(self) -> None:
        k = self.size
        keep = self.idle[:k] <= _IDLE
        keep[0] = True
        index = np.flatnonzero(keep)
        new = np.full(k, -1)
        new[index] = np.arange(len(index))
        m = len(index)
        self.b[:m], self.g[:m], self.beta[:m], self.idle[:m] = (
            self.b[index],
            self.g[index],
            self.beta[index],
            self.idle[index],
        )
        self.gram[:m, :m] = self.gram[index][:, index]
        if self.coef is not None:
            self.coef[:k] = [self.coef[t] for t in index] + [None] * (k - m)
        self.pivot = int(new[self.pivot])
        self.free = [int(new[t]) for t in self.free]
        self.size = m

    def certificate(self) -> tuple[float, np.ndarray | None]:
        """What the exact reduced dual value b.β - ½‖Σ β_t g_t‖² needs when the normals are
        estimates: b.β and the per-document coefficients Σ β_t coef_t, with
        Σ β_t g_t = X.T @ Σ β_t coef_t (None when only R >= 0 carries weight)."""
        k = self.size
        assert self.coef is not None  # certificates are for estimated planes, built with keep_coef
        combined = None
        for t in np.flatnonzero(self.beta[:k] > 0.0):
            coef = self.coef[t]
            if coef is not None:
                term = self.beta[t] * coef
                combined = term if combined is None else combined + term
        return float(self.beta[:k] @ self.b[:k]), combined

    def restart(self, b: float, g: np.ndarray) -> None:
        """Replace every plane by R >= 0 and the one exact plane (b, g), with all the weight."""
        self.size = 1
        self.beta[0] = 0.0
        self.pivot = 0
        self.free = []
        self.solved = True
        if self.coef is not None:
            self.coef = [None] * len(self.coef)
        self.add(b, g)
        self.beta[1] = 1.0
        self.idle[:2] = 0
        self._refactor(1)
