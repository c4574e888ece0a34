r"""What the kinds' estimators share: checked counts, their frequencies, and the
per-entry Hoeffding radius.

Each kind of set estimates itself from counts in its own file (``from_counts`` and its
``estimate_*`` function: :mod:`.l1`, :mod:`.interval`, :mod:`.linf`, :mod:`.kl`); the
sets other than the paper's L1 ball come with a confidence statement of their own.
With :math:`n(s, a)` independent samples of each pair (the counts of a generative
model, or the first n visits of each pair), the set contains the true kernel with
probability at least :math:`1 - \delta`.  They all start from the per-entry Hoeffding
bound with a union bound over the E estimated entries (E = S S A, or the number of
supported entries),

.. math::

    P\Bigl(\exists (s, a, s'): |\hat f(s'|s,a) - P(s'|s,a)| \ge \epsilon(s,a)\Bigr)
    \le \sum 2 e^{-2 n(s,a) \epsilon(s,a)^2} = \delta
    \quad\text{for}\quad \epsilon(s, a) = \sqrt{\frac{\ln(2E/\delta)}{2 n(s, a)}},

where :math:`\hat f = \text{counts} / n` are the empirical frequencies (no
pseudo-counts: they only move the nominal point, and the radius accounts for the
move).  A pair without samples gets the whole simplex.
"""

from __future__ import annotations

import numpy as np

from .._checks import InputError, as_float_array, check_int, check_nonnegative, check_real
from ..core.model_checks import ModelError
from .base import support_mask

__all__ = ["PSEUDO_COUNT_RANGE", "check_pseudo_count", "count_frequencies", "entry_radius",
           "hoeffding_box", "smoothed_counts"]

#: The pseudo-counts a set estimated from counts takes: 0, or a number in this range (a
#: subnormal one gives infinite radii, one near 1e308 overflows the sums of the counts).
PSEUDO_COUNT_RANGE = (1e-300, 1e12)


def check_pseudo_count(pseudo_count, positive: bool = False, hint: str = "") -> float:
    """``pseudo_count`` checked: 0 (unless ``positive``) or in :data:`PSEUDO_COUNT_RANGE`."""
    low, high = PSEUDO_COUNT_RANGE
    pc = check_real(pseudo_count, "pseudo_count", 0.0, high, low_open=positive, hint=hint)
    if 0.0 < pc < low:
        raise InputError(f"pseudo_count must be 0 or at least {low:g} (a smaller one makes "
                         f"the radii of a pair without counts infinite), got {pc!r}{hint}")
    return pc


def entry_radius(n, n_entries: int, delta: float = 0.1) -> np.ndarray:
    r"""The per-entry Hoeffding radius :math:`\sqrt{\ln(2E/\delta) / (2n)}` (inf where
    n = 0) of the module docstring, for E estimated entries.

    >>> round(float(entry_radius(100, 5 * 25 * 4, 0.1)), 6)
    0.214597
    """
    d = check_real(delta, "delta", 0.0, 1.0, low_open=True, high_open=True,
                   hint=" (the error probability)")
    E = check_int(n_entries, "n_entries", 1, 10**18)
    n = as_float_array(n, "counts n(s, a)", "give counts >= 0")
    check_nonnegative(n, "counts n(s, a)", "counts")
    with np.errstate(divide="ignore"):
        # ln(2E) - ln(delta): 2E / delta overflows for a subnormal delta (5e-324)
        return np.sqrt((np.log(2.0 * E) - np.log(d)) / (2.0 * n))


def count_frequencies(counts, pseudo_count, support, what: str):
    """Checked state-form counts: (counts, support, n, frequencies, smoothed).

    ``counts`` (S, A, S) over next states, ``support`` (S, A, S) bool or None (every
    next state); ``what`` names the set in the message that refuses a pair without
    counts and without a pseudo-count.
    """
    c = as_float_array(counts, "counts", "give an array (S, A, S) of counts over next "
                                         "states")
    if c.ndim != 3 or c.shape[0] != c.shape[2] or 0 in c.shape:
        raise ModelError(f"counts must have shape (S, A, S) with S, A >= 1 (counts over "
                         f"next states), got {c.shape}")
    S, A, _ = c.shape
    check_nonnegative(c, "counts", "counts")
    pc = check_pseudo_count(pseudo_count)
    sup = (np.ones(c.shape, dtype=bool) if support is None else
           support_mask(support, S, A, c, "counts", "enlarge the support"))
    n = c.sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.where(n[:, :, None] > 0, c / n[:, :, None], 0.0)
    total, m = smoothed_counts(c, pc, sup, what)
    return c, sup, n, f, total / m[:, :, None]


def smoothed_counts(c, pc, mask, what: str):
    """Counts plus the pseudo-count on the support, and their sums n(s, a) (all > 0)."""
    total = c + pc * mask
    m = total.sum(axis=2)
    if (m <= 0).any():
        s, a = (int(i) for i in np.argwhere(m <= 0)[0])
        raise ModelError(
            f"state-action pair ({s}, {a}) has no counts and pseudo_count=0, so the "
            f"nominal distribution of the {what} is undefined; use pseudo_count > 0 or "
            f"collect more data"
        )
    return total, m


def hoeffding_box(sup, n, f, delta):
    r"""The Hoeffding box of the frequencies ``f`` (S, A, S) of ``n`` (S, A) samples:
    :math:`\ell = \max(0, \hat f - \epsilon)`, :math:`u = \min(1, \hat f + \epsilon)`
    with :math:`\epsilon` = :func:`entry_radius` over the supported entries of ``sup``
    (0 off the support; [0, 1] for a pair without samples).  Returns (lo, up)."""
    eps = entry_radius(n, int(sup.sum()), delta)[:, :, None]
    lo = np.where(sup, np.clip(f - eps, 0.0, 1.0), 0.0)
    up = np.where(sup, np.clip(f + eps, 0.0, 1.0), 0.0)
    return lo, up
