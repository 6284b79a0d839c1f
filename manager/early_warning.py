"""Early warning: will a running or waiting task pass its timeout? Pure (no database): the monitor's
`predicted_timeout` rule and bench/early_warning.py's replay call the same code.

The model, fitted on a table's past runs of one table service: seconds = a + b·bytes + c·load + d·bytes·load, `load`
being its queue's running jobs per slot when the run started (shared executors slow every job), by least
squares of the relative errors, then again without the outliers; with fewer than MIN_FIT runs, one
seconds-per-byte rate (their median). The spread `sigma` of log(seconds / predicted) makes a log-logistic
law of a run's duration.

A task that has run `elapsed` seconds (0: waiting) lasts longer than its timeout with the probability
S(timeout) / S(elapsed) (S: the law's survival), which grows as a run outlasts what its bytes explain: a
plan too big is warned of before it starts, a run slower than usual while it runs. It is warned of when
that probability reaches WARN_PROBABILITY."""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

HISTORY = 20             # a table's last succeeded runs of a table service the model is fitted on
MIN_FIT = 8               # runs needed to fit the three coefficients (fewer: a median rate)
MIN_SIGMA = 0.1           # a floor on the spread: a few alike runs do not make a certainty
FEW_RUNS_SIGMA = 0.35     # the spread assumed with fewer than MIN_FIT runs
WARN_PROBABILITY = 0.7
_LOGISTIC = math.pi / math.sqrt(3)  # the logistic law of standard deviation 1


@dataclass(frozen=True)
class Run:
    """A finished run: its plan's bytes, how long it took, its queue's load (running jobs per slot) at start."""
    bytes: int
    seconds: float
    load: float = 0.0


@dataclass(frozen=True)
class Forecast:
    seconds: float         # the predicted run time (a running task: given it has run this long already)
    probability: float     # that the run passes its timeout
    warn: bool


@dataclass(frozen=True)
class DurationModel:
    coef: tuple[float, float, float, float]  # seconds = coef . (1, bytes, load, bytes x load)
    sigma: float                             # spread of log(seconds / predicted)
    runs: int

    @classmethod
    def fit(cls, history: Sequence[Run]) -> DurationModel | None:
        """The model of these runs, or None without a usable one."""
        runs = [r for r in history if r.bytes > 0 and r.seconds > 0]
        if not runs:
            return None
        x = np.array([_features(r.bytes, r.load) for r in runs])
        y = np.array([r.seconds for r in runs])
        if len(runs) >= MIN_FIT and np.linalg.matrix_rank(x) == 4:
            kept = np.ones(len(runs), dtype=bool)
            for _ in range(2):  # the second time without the outliers (a run slowed by a skew or a spill):
                # they would widen the law of every run, and make a plan too big look as likely to pass as not
                coef = _relative_least_squares(x[kept], y[kept])
                residuals = np.log(y / np.maximum(x @ coef, 1e-3))
                spread = 1.4826 * float(np.median(np.abs(residuals - np.median(residuals))))
                kept = np.abs(residuals) <= 3 * max(spread, MIN_SIGMA)
                if kept.sum() < MIN_FIT or np.linalg.matrix_rank(x[kept]) < 4:
                    break
            sigma = float(np.sqrt(np.sum(residuals[kept] ** 2) / max(1, int(kept.sum()) - 4)))
            if np.all(x @ coef > 0):
                return cls((float(coef[0]), float(coef[1]), float(coef[2]), float(coef[3])),
                           max(sigma, MIN_SIGMA), len(runs))
        rate = statistics.median(r.seconds / r.bytes for r in runs)
        return cls((0.0, rate, 0.0, 0.0), FEW_RUNS_SIGMA, len(runs))

    def median_seconds(self, size: int, load: float) -> float:
        return max(float(np.dot(self.coef, _features(size, load))), 1e-3)

    def forecast(self, size: int, load: float, elapsed: float, timeout: float) -> Forecast:
        """For a task of `size` bytes on a queue at `load`, that has run `elapsed` seconds (0: waiting)."""
        mu = math.log(self.median_seconds(size, load))
        survived = 1.0 if elapsed <= 0 else _survival((math.log(elapsed) - mu) / self.sigma)
        if elapsed >= timeout:
            return Forecast(elapsed, 1.0, True)
        if survived <= 0.0:  # far past anything the law expects: it runs on
            return Forecast(timeout, 1.0, True)
        probability = min(1.0, _survival((math.log(timeout) - mu) / self.sigma) / survived)
        median = math.exp(mu + self.sigma * _quantile(min(1 - survived / 2, 1 - 1e-12)))
        return Forecast(max(median, elapsed), probability, probability >= WARN_PROBABILITY)


def _features(size: int, load: float) -> list[float]:
    load = max(load, 0.0)
    return [1.0, float(size), load, size * load]


def _relative_least_squares(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares of the relative errors (a run's noise grows with its length): each row over its y."""
    coef, *_ = np.linalg.lstsq(x / y[:, None], np.ones(len(y)), rcond=None)
    return coef


def forecast(history: Sequence[Run], size: int, load: float, elapsed: float, timeout: float) -> Forecast | None:
    """The forecast of a task of `size` bytes from its table's `history` of the service; None without one."""
    model = DurationModel.fit(history) if size > 0 else None
    return model.forecast(size, load, elapsed, timeout) if model is not None else None


def _survival(z: float) -> float:
    """The survival of the standardised logistic law (the log of a log-logistic duration): tails heavier
    than the normal's, so a run far slower than its peers is not deemed about to end."""
    return 1.0 / (1.0 + math.exp(min(z * _LOGISTIC, 700.0)))


def _quantile(p: float) -> float:
    return math.log(p / (1 - p)) / _LOGISTIC
