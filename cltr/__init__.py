"""cltr: counterfactual learning-to-rank (Agarwal, Takatsu, Zaitsev, Joachims, SIGIR 2019)."""

__version__ = "0.1.0"
