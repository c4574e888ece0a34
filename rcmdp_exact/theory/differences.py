r"""Central finite differences: the independent reference of the exact gradients.

:func:`central_difference` differentiates any scalar function of an array (order 2 or 4,
the step rule of :func:`fd_step`, one-sided or shrunk stencils near a kink such as a
ReLU's); :func:`finite_difference` applies it to the Lagrangian
(:func:`rcmdp_exact.theory.gradients.lagrangian`, by its own dense solve), with respect to
the policy or the adversary.  ``docs/gradients.md`` ("Finite differences") explains the
step.
"""

from __future__ import annotations

import numpy as np

from .._checks import as_float_array, check_choice, check_int, check_real, check_shape
from .._progress import progress_default, tqdm
from ..core.model import TabularCMDP
from ..core.model_checks import ModelError
from ._context import GradientContext, check_terminates, solve_lagrangian

__all__ = [
    "FD_STEPS",
    "central_difference",
    "fd_step",
    "finite_difference",
]


#: Relative step of each stencil: eps**(1/3) ~ 6.1e-6 (order 2), eps**(1/5) ~ 7.4e-4 (order 4).
FD_STEPS = {2: float(np.finfo(np.float64).eps ** (1.0 / 3.0)),
            4: float(np.finfo(np.float64).eps ** (1.0 / 5.0))}

# central-difference stencils: offsets (in units of h) and weights (divided by h)
_STENCILS = {2: ((1.0, -1.0), (0.5, -0.5)),
             4: ((2.0, 1.0, -1.0, -2.0), (-1.0 / 12.0, 8.0 / 12.0, -8.0 / 12.0, 1.0 / 12.0))}


def check_order(order) -> int:
    """``order`` if it is 2 or 4 (an int: 2.0 is refused as any float is)."""
    check_int(order, "order", hint=" (of the finite-difference stencil, 2 or 4)")
    return check_choice(order, "finite-difference order", tuple(_STENCILS))


def fd_step(x, step: float | None = None, order: int = 4) -> np.ndarray:
    r"""The step rule :math:`h_i = \text{step} \cdot \max(1, |x_i|)`.

    The default relative step balances truncation against rounding.  A central
    difference of order p has truncation error :math:`O(h^p)` and rounding error
    :math:`\epsilon_f / h`, where :math:`\epsilon_f` is the noise of the computed f;
    their sum is smallest near :math:`h \approx \epsilon^{1/(p+1)}` times the scale of
    ``x``: eps**(1/3) ~ 6.1e-6 for order 2, eps**(1/5) ~ 7.4e-4 for order 4.  The
    Lagrangian comes out of a linear solve whose noise is about
    :math:`\kappa \epsilon |L|` with :math:`\kappa \approx 1/(1 - \gamma)`, a hundred
    times eps at gamma = 0.99, which is why order 4 with its larger step is the default.
    Each step is rounded so that ``x + h`` and ``x - h`` are exact in float64.
    """
    x = np.asarray(x, dtype=np.float64)
    s = (FD_STEPS[check_order(order)] if step is None else
         check_real(step, "finite-difference step", 0.0, 1.0, low_open=True,
                    hint=" (a relative step, or None for the default rule)"))
    h = s * np.maximum(1.0, np.abs(x))
    return (x + h) - x


def central_difference(f, x, step: float | None = None, order: int = 4,
                       max_step=None, progress: bool | None = None) -> np.ndarray:
    """Central differences of a scalar function in float64.

    Order 2: :math:`(f(x + h e_i) - f(x - h e_i)) / 2h`; order 4 (default):
    :math:`(-f(x + 2h e_i) + 8 f(x + h e_i) - 8 f(x - h e_i) + f(x - 2h e_i)) / 12h`,
    with the step rule of :func:`fd_step`.

    Parameters
    ----------
    f : callable
        Scalar function of an array shaped like ``x``.
    x : array
    step : float, optional
        Relative step (see :func:`fd_step`).
    order : 2 or 4
    max_step : array (n,) or (n, 2), optional
        Per coordinate, how far x may move (up, down) before f stops being smooth,
        e.g. the distance to a ReLU kink (:meth:`~rcmdp_exact.core.nn.MLP.kink_free_step`).
        Where the stencil would reach past half of it, the coordinate uses the
        second-order one-sided stencil :math:`(-3 f(x) + 4 f(x + h) - f(x + 2h)) / 2h`
        towards the farther side when that side leaves room for the rule's step, and
        otherwise a central stencil shrunk to fit.
    progress : bool or None
        Show a progress bar over the coordinates (default None: only when standard
        error is a terminal).
    """
    order = check_order(order)
    x = np.array(x, dtype=np.float64)
    flat = x.ravel()
    n = flat.size
    h = fd_step(x, step, order).ravel()
    kind = np.zeros(n, dtype=np.int8)  # 0 central, +1 forward, -1 backward
    if max_step is not None:
        bound = as_float_array(max_step, "max_step", f"give ({n},) or ({n}, 2) bounds",
                               finite=False)
        bound = np.repeat(bound[:, None], 2, axis=1) if bound.shape == (n,) else bound
        check_shape(bound, (n, 2), f"max_step (or shape ({n},))", ("i", "side"))
        reach = max(_STENCILS[order][0])
        tight = 2.0 * reach * h > bound.min(axis=1)
        h2 = fd_step(x, step, 2).ravel()
        room_up, room_down = bound[:, 0], bound[:, 1]
        side = np.where(room_up >= room_down, 1, -1).astype(np.int8)
        room = np.maximum(room_up, room_down)
        one_sided = tight & (room >= 4.0 * h2)
        kind[one_sided] = side[one_sided]
        h = np.where(one_sided, h2, h)
        shrink = tight & ~one_sided
        h = np.where(shrink, bound.min(axis=1) / (2.0 * reach), h)
        h = (flat + h) - flat
        if (h <= 0).any():
            i = int(np.flatnonzero(h <= 0)[0])
            raise ModelError(
                f"coordinate {i} sits exactly on a point where f is not differentiable "
                f"(max_step = {bound[i].tolist()}); move the parameters slightly"
            )
    grad = np.empty(n)
    for i in tqdm(range(n), disable=not progress_default(progress), desc="finite differences",
                  leave=False):
        if kind[i] == 0:
            offsets, weights = _STENCILS[order]
        else:
            offsets = (0.0, float(kind[i]), 2.0 * kind[i])
            weights = tuple(w * kind[i] for w in (-1.5, 2.0, -0.5))
        xi = flat[i]
        acc = 0.0
        for off, wgt in zip(offsets, weights, strict=True):
            flat[i] = xi + off * h[i]
            acc += wgt * f(x)
        flat[i] = xi
        grad[i] = acc / h[i]
    return grad.reshape(x.shape)


def finite_difference(model: TabularCMDP, params, lam=None, parametrisation="softmax",
                      adversary_params=None, adversary_parametrisation="softmax",
                      wrt: str = "policy", step: float | None = None, order: int = 4,
                      progress: bool | None = None) -> np.ndarray:
    """Central finite differences of :func:`~rcmdp_exact.theory.gradients.lagrangian` (the
    independent reference).

    Parameters
    ----------
    wrt : "policy" or "adversary"
        Which parameters to perturb.
    step : float, optional
        Relative step; the rule is :func:`fd_step`.
    order : 2 or 4
        Order of the central stencil (:func:`central_difference`).  For MLPs the step
        of each coordinate is also kept below half its distance to a ReLU kink.

    Returns
    -------
    numpy.ndarray
        The gradient estimate, shaped like the perturbed parameters.
    """
    check_choice(wrt, "wrt", ("policy", "adversary"))
    ctx = GradientContext(model, params, lam, parametrisation, adversary_params,
                          adversary_parametrisation, need_adversary=(wrt == "adversary"))
    if ctx.gamma == 1.0:
        check_terminates(model, np.einsum("sa,sat->st", ctx.policy.probs(ctx.theta),
                                           ctx.kernel()), "the Lagrangian with gamma = 1")
    if wrt == "policy":
        P = ctx.kernel()
        grad = central_difference(
            lambda th: solve_lagrangian(ctx, ctx.policy.probs(th), P)[0],
            ctx.theta, step, order, _kink_bound(ctx.policy, ctx.theta), progress)
        return grad.reshape(ctx.params_shape)
    pi = ctx.policy.probs(ctx.theta)
    grad = central_difference(
        lambda ph: solve_lagrangian(ctx, pi, ctx.kernel(ph))[0], ctx.phi, step, order,
        _kink_bound(ctx.adversary, ctx.phi), progress)
    return grad.reshape(ctx.adv_shape)


def _kink_bound(par, params):
    fn = getattr(par, "kink_free_step", None)
    return None if fn is None else fn(params)
