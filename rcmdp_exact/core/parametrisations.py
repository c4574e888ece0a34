r"""Parametrised policies and adversaries with analytic Jacobians.

Both the policy :math:`\pi_\theta(a \mid s)` and the adversary
:math:`\pi_{adv}(o \mid s, a)` are *conditional softmax* distributions: a set of rows
(states for the policy, state-action pairs for the adversary) each carrying a
distribution over categories (actions, or next-state outcomes).  Two forms are offered
for each, and a third for the policy:

* **tabular softmax**: one free logit per (row, category),
  :math:`p(c \mid r) = e^{\theta_{rc}} / \sum_{c'} e^{\theta_{rc'}}`; the parameters
  have shape (rows, categories), e.g. (S, A) for the policy.  Its Jacobian is
  :math:`\partial p(c \mid r) / \partial \theta_{r'c'} = [r = r']\, p(c \mid r)
  ([c = c'] - p(c' \mid r))`.
* **MLP**: the hand-written network of :mod:`rcmdp_exact.core.nn` (one hidden ReLU layer,
  softmax head) applied to an input row per state or state-action pair; the
  parameters are its flat vector.
* **direct** (policies only, :class:`DirectPolicy`): the parameters are the
  probabilities :math:`\pi(a \mid s)` themselves, (S, A) with rows on the simplex;
  the Jacobian is the identity, so a gradient is the vector of partial derivatives
  :math:`\partial L / \partial \pi(a \mid s)` of the Lagrangian extended to all
  (S, A) arrays by its formula :math:`p_0^\top (I - \gamma P_\pi)^{-1} r_\pi`
  (Agarwal et al. 2021, "On the theory of policy gradient methods", Lemma 4.1 gives
  :math:`d_\gamma(s) Q(s, a)`).  Projected gradient ascent uses it as is; the
  gradient *within* the simplex is its projection, each row minus its mean.

Logits and probabilities are not interchangeable: :func:`check_logits` refuses a
tabular softmax parameter array whose every row is a probability distribution (with
two or more actions), the mistake of passing probabilities where logits are
expected, and a direct policy refuses rows that are not distributions (logits passed
as probabilities).

Inputs of the MLP forms (the paper's learners; ``docs/protocol.md``)
--------------------------------------------------------------------
* policy: the model's ``state_features`` (S, F) times ``feature_scale``;
* adversary: the same scaled state features followed by the action index times
  ``action_scale``, one row per pair in the order ``s * A + a``.

By default ``feature_scale = 1 / S`` and ``action_scale = 1 / A``, the scaling of the
reference implementation (coordinates by 1/S, the action by 1/A); any float or an
(F,) array may be given instead (e.g. ``1 / 4`` to map the navigation grid to [0, 1]).

Adversary outcomes
------------------
The adversary chooses among the outcomes of a pair: ``model.outcomes`` (S, A, O) when
the model has them (navigation: the 5 offsets stay / four moves clipped at walls;
inventory: the next states), otherwise every next state (O = S).  Its kernel is

.. math::  P_{adv}(s' \mid s, a) = \sum_o \pi_{adv}(o \mid s, a)\, [\mathrm{out}(s, a, o) = s'].

Terminal states are absorbing whatever the adversary outputs there (the episode has
ended, nothing more is earned), so its outputs in terminal states carry no gradient.

Every object exposes the same small interface: ``n_params``, ``param_shape``,
``probs(params)`` (rows, categories), ``vjp(params, G)`` (the gradient of
:math:`\sum G \odot p`, shaped like the parameters), ``jacobian(params)``
(rows, categories, n_params), ``score(params)`` (the gradients of
:math:`\log p`, same shape) and ``init(seed)``.
"""

from __future__ import annotations

import numpy as np

from .._checks import (
    as_float_array,
    check_finite,
    check_int,
    check_limit,
    check_real,
    check_shape,
    rng_from,
    row_tolerance,
)
from ..names import DEFAULT_HIDDEN
from .model import TabularCMDP
from .model_checks import ModelError
from .nn import MLP, log_softmax, softmax

__all__ = [
    "DEFAULT_HIDDEN",
    "DirectPolicy",
    "MLPAdversary",
    "MLPPolicy",
    "TabularAdversary",
    "TabularPolicy",
    "adversary_inputs",
    "adversary_outcomes",
    "check_logits",
    "make_adversary",
    "make_policy",
    "policy_inputs",
]

#: Hidden width of the MLP policy and adversary (the paper: 100 ReLU units).

_TABULAR_NAMES = ("softmax", "tabular")
_MLP_NAMES = ("mlp",)
_DIRECT_NAMES = ("direct",)
#: The policy parametrisations by name.
POLICY_PARAMETRISATIONS = ("softmax", "mlp", "direct")


def check_logits(params, what: str = "policy") -> None:
    """Refuse tabular softmax logits that are probabilities (every row a distribution).

    Softmax logits are any real numbers; an (rows, categories) array with two or more
    categories whose every row is non-negative and sums to 1 (to 1e-12 per entry) is
    almost surely a probability table passed by mistake, and would be read as the
    (quite different) policy softmax(params).  Raises an
    :class:`~rcmdp_exact.InputError` that says how to pass either.
    """
    arr = np.asarray(params, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] < 2 or not np.isfinite(arr).all():
        return
    if (arr >= 0.0).all() and (arr <= 1.0).all() and np.all(
            np.abs(arr.sum(axis=1) - 1.0) <= 1e-12 * arr.shape[1]):
        direct = ("parametrisation='direct' for probabilities, or " if what == "policy"
                  else "")
        raise ModelError(
            f"the {what} parameters look like probabilities (every row of the "
            f"{arr.shape} array is a distribution), but the softmax parametrisation "
            f"reads logits: pass {direct}the logits np.log(probs) (if these numbers are "
            f"meant as logits, add a constant to a row: softmax does not change)"
        )


# =========================================================================== generic forms
class _SoftmaxTable:
    """Tabular conditional softmax: one logit per (row, category).

    Parameters
    ----------
    n_rows, n_categories : int
    """

    kind = "softmax"

    def __init__(self, n_rows: int, n_categories: int):
        self.n_rows = int(n_rows)
        self.n_categories = int(n_categories)
        self.param_shape = (self.n_rows, self.n_categories)
        self.n_params = self.n_rows * self.n_categories

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rows={self.n_rows}, categories={self.n_categories})"

    def check_params(self, params) -> np.ndarray:
        """``params`` as a float64 (rows, categories) array (a flat vector is accepted)."""
        name = f"{type(self).__name__} logits"
        arr = as_float_array(params, name, "give an array of logits", finite=False)
        if arr.shape == (self.n_params,):
            arr = arr.reshape(self.param_shape)
        check_shape(arr, self.param_shape, f"{name} (or flat ({self.n_params},))",
                    ("row", "category"))
        check_finite(arr, name, ("row", "category"))
        return arr

    def init(self, seed=None, scale: float = 1.0) -> np.ndarray:
        """Seeded random logits :math:`\\theta \\sim N(0, \\text{scale}^2)`."""
        return scale * rng_from(seed).standard_normal(self.param_shape)

    def probs(self, params) -> np.ndarray:
        """Probabilities (rows, categories)."""
        return softmax(self.check_params(params), axis=1)

    def log_probs(self, params) -> np.ndarray:
        return log_softmax(self.check_params(params), axis=1)

    def vjp(self, params, G) -> np.ndarray:
        """Gradient of :math:`\\sum_{rc} G_{rc}\\, p(c \\mid r)`.

        It is :math:`p \\odot (G - \\sum_c p G)` row by row.
        """
        p = self.probs(params)
        G = _check_cotangent(G, p.shape)
        return p * (G - (p * G).sum(axis=1, keepdims=True))

    def score(self, params) -> np.ndarray:
        """:math:`\\nabla_\\theta \\log p(c \\mid r)` (rows, categories, n_params)."""
        p = self.probs(params)
        R, C = self.param_shape
        out = np.zeros((R, C, R, C))
        idx = np.arange(R)
        out[idx, :, idx, :] = np.eye(C)[None, :, :] - p[:, None, :]
        return out.reshape(R, C, R * C)

    def jacobian(self, params) -> np.ndarray:
        """:math:`\\partial p(c \\mid r) / \\partial \\theta` (rows, categories, n_params)."""
        p = self.probs(params)
        return p[:, :, None] * self.score(params)


class _SoftmaxMLP:
    """Conditional softmax computed by an :class:`~rcmdp_exact.core.nn.MLP` from fixed inputs.

    Parameters
    ----------
    inputs : array (rows, F)
        One input row per conditioning row (already scaled).
    n_categories : int
    hidden : int
        Hidden width (100 in the paper).
    """

    kind = "mlp"

    def __init__(self, inputs, n_categories: int, hidden: int = DEFAULT_HIDDEN):
        x = as_float_array(inputs, "inputs", "give an array (rows, F)")
        check_shape(x, (x.shape[0] if x.ndim else 1, x.shape[-1] if x.ndim else 1), "inputs",
                    ("row", "feature"))
        self.inputs = x
        self.n_rows = x.shape[0]
        self.n_categories = check_int(n_categories, "n_categories", 1)
        hidden = check_limit(hidden, "hidden", "hidden")
        self.net = MLP(x.shape[1], self.n_categories, hidden=hidden, seed=0)
        self.hidden = self.net.hidden
        self.n_params = self.net.n_params
        self.param_shape = (self.n_params,)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(rows={self.n_rows}, inputs={self.inputs.shape[1]}, "
                f"hidden={self.hidden}, categories={self.n_categories})")

    def check_params(self, params) -> np.ndarray:
        name = (f"{type(self).__name__} parameters (F={self.inputs.shape[1]}, "
                f"H={self.hidden}, O={self.n_categories})")
        return as_float_array(params, name, "give the flat parameter vector",
                              shape=self.param_shape, axes=("i",))

    def init(self, seed=None, bias_scale: float = 0.1) -> np.ndarray:
        """Seeded Glorot-uniform weights and small biases (:class:`~rcmdp_exact.core.nn.MLP`)."""
        return self.net.init(seed, bias_scale=bias_scale)

    def probs(self, params) -> np.ndarray:
        return self.net.probs(self.inputs, self.check_params(params))

    def log_probs(self, params) -> np.ndarray:
        return self.net.log_probs(self.inputs, self.check_params(params))

    def vjp(self, params, G) -> np.ndarray:
        """Gradient of :math:`\\sum_{rc} G_{rc}\\, p(c \\mid r)` by the hand-written backward."""
        p = self.check_params(params)
        G = _check_cotangent(G, (self.n_rows, self.n_categories))
        return self.net.vjp_probs(self.inputs, G, p)

    def score(self, params) -> np.ndarray:
        return self.net.score(self.inputs, self.check_params(params))

    def jacobian(self, params) -> np.ndarray:
        return self.net.jacobian_probs(self.inputs, self.check_params(params))

    def kink_free_step(self, params) -> np.ndarray:
        """Largest move per parameter and direction that flips no ReLU (n_params, 2)."""
        return self.net.kink_free_step(self.inputs, self.check_params(params))

    def relu_margin(self, params) -> float:
        """Smallest distance of a hidden pre-activation to the ReLU kink."""
        return self.net.relu_margin(self.inputs, self.check_params(params))


def _check_cotangent(G, shape) -> np.ndarray:
    return as_float_array(G, "cotangent", "give one number per (row, category)",
                          shape=tuple(shape), axes=("row", "category"))


# =========================================================================== inputs
def _scale(value, default: float, width: int, name: str) -> np.ndarray:
    if value is None:
        return np.full(width, default)
    arr = as_float_array(value, name, f"give a number or an array of {width}")
    if arr.ndim == 0:
        arr = np.full(width, float(arr))
    check_shape(arr, (width,), f"{name} (or one number)", ("feature",))
    return arr


def policy_inputs(model: TabularCMDP, feature_scale=None) -> np.ndarray:
    """MLP policy inputs (S, F): ``model.state_features * feature_scale`` (default 1/S)."""
    feat = np.asarray(model.state_features, dtype=np.float64)
    scale = _scale(feature_scale, 1.0 / model.n_states, feat.shape[1], "feature_scale")
    return feat * scale


def adversary_inputs(model: TabularCMDP, feature_scale=None, action_scale=None) -> np.ndarray:
    """MLP adversary inputs (S*A, F+1): scaled state features and ``a * action_scale``.

    Row ``s * A + a`` belongs to the pair (s, a); ``action_scale`` defaults to 1/A.
    """
    S, A = model.n_states, model.n_actions
    x = policy_inputs(model, feature_scale)
    a_scale = float(_scale(action_scale, 1.0 / A, 1, "action_scale")[0])
    rows = np.repeat(x, A, axis=0)
    acts = np.tile(np.arange(A, dtype=np.float64), S)[:, None] * a_scale
    return np.hstack([rows, acts])


def adversary_outcomes(model: TabularCMDP) -> np.ndarray:
    """The outcome map (S, A, O): ``model.outcomes`` or every next state (O = S)."""
    if model.outcomes is not None:
        return np.asarray(model.outcomes, dtype=np.int64)
    S, A = model.n_states, model.n_actions
    return np.broadcast_to(np.arange(S)[None, None, :], (S, A, S)).copy()


# =========================================================================== policies
class _PolicyMixin:
    side = "policy"

    def policy(self, params) -> np.ndarray:
        """The policy table :math:`\\pi(a \\mid s)` (S, A)."""
        return self.probs(params)


class TabularPolicy(_PolicyMixin, _SoftmaxTable):
    """Tabular softmax policy: logits (S, A)."""

    def __init__(self, model: TabularCMDP):
        _SoftmaxTable.__init__(self, model.n_states, model.n_actions)
        self.n_states, self.n_actions = model.n_states, model.n_actions


class DirectPolicy(_PolicyMixin):
    """The direct parametrisation: the parameters are the probabilities pi(a|s), (S, A).

    :meth:`check_params` requires rows on the simplex (an
    :class:`~rcmdp_exact.InputError` naming the row otherwise: logits passed as
    probabilities); :meth:`probs` returns the array as it is, so that finite
    differences may step off the simplex (the function is extended by its formula,
    see the module notes).
    """

    kind = "direct"

    def __init__(self, model: TabularCMDP):
        self.n_states, self.n_actions = model.n_states, model.n_actions
        self.n_rows, self.n_categories = self.n_states, self.n_actions
        self.param_shape = (self.n_states, self.n_actions)
        self.n_params = self.n_states * self.n_actions

    def __repr__(self) -> str:
        return f"DirectPolicy(S={self.n_states}, A={self.n_actions})"

    def _array(self, params, name: str) -> np.ndarray:
        arr = as_float_array(params, name, "give the probabilities pi(a|s) as an (S, A) "
                                           "array", finite=False)
        if arr.shape == (self.n_params,):
            arr = arr.reshape(self.param_shape)
        check_shape(arr, self.param_shape, f"{name} (or flat ({self.n_params},))",
                    ("s", "a"))
        check_finite(arr, name, ("s", "a"))
        return arr

    def check_params(self, params) -> np.ndarray:
        """``params`` as a float64 (S, A) array whose rows are distributions."""
        name = "direct policy probabilities"
        arr = self._array(params, name)
        bad = (arr < 0).any(axis=1) | (np.abs(arr.sum(axis=1) - 1.0)
                                       > row_tolerance(self.n_actions))
        if bad.any():
            s = int(np.flatnonzero(bad)[0])
            raise ModelError(
                f"{name}: row s={s} is {arr[s].tolist()}, not a distribution (entries "
                f">= 0 summing to 1); parametrisation='direct' takes the probabilities "
                f"themselves: for logits use parametrisation='softmax'"
            )
        return arr

    def init(self, seed=None) -> np.ndarray:
        """Seeded random rows, each uniform on the simplex (Dirichlet(1, ..., 1))."""
        return rng_from(seed).dirichlet(np.ones(self.n_actions), size=self.n_states)

    def probs(self, params) -> np.ndarray:
        """The probabilities: ``params`` itself (S, A), not re-checked."""
        return self._array(params, "direct policy probabilities")

    def log_probs(self, params) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.probs(params))

    def vjp(self, params, G) -> np.ndarray:
        r"""Gradient of :math:`\sum_{sa} G_{sa}\, \pi(a \mid s)`: G itself."""
        return _check_cotangent(G, self.param_shape).copy()

    def jacobian(self, params) -> np.ndarray:
        """The identity (S, A, S*A)."""
        return np.eye(self.n_params).reshape(self.n_states, self.n_actions, self.n_params)

    def score(self, params) -> np.ndarray:
        r""":math:`\nabla \log \pi(a \mid s) = e_{sa} / \pi(a \mid s)` (0 where the
        probability is 0: such actions are never sampled)."""
        p = self.probs(params).ravel()
        inv = np.divide(1.0, p, out=np.zeros_like(p), where=p > 0)
        return (np.diag(inv)).reshape(self.n_states, self.n_actions, self.n_params)


class MLPPolicy(_PolicyMixin, _SoftmaxMLP):
    """MLP policy on the scaled state features (see the module notes)."""

    def __init__(self, model: TabularCMDP, hidden: int = DEFAULT_HIDDEN, feature_scale=None):
        _SoftmaxMLP.__init__(self, policy_inputs(model, feature_scale), model.n_actions, hidden)
        self.n_states, self.n_actions = model.n_states, model.n_actions


# =========================================================================== adversaries
class _AdversaryMixin:
    side = "adversary"

    def _setup_adversary(self, model: TabularCMDP) -> None:
        self.n_states, self.n_actions = model.n_states, model.n_actions
        self.outcomes = adversary_outcomes(model)
        self.n_outcomes = self.outcomes.shape[2]
        self.terminal = np.asarray(model.terminal, dtype=bool).copy()
        S, A, O = self.outcomes.shape
        self._flat_next = (np.arange(S * A)[:, None] * S + self.outcomes.reshape(S * A, O)).ravel()

    def outcome_probs(self, params) -> np.ndarray:
        """:math:`\\pi_{adv}(o \\mid s, a)` as an (S, A, O) array."""
        return self.probs(params).reshape(self.n_states, self.n_actions, self.n_outcomes)

    def kernel(self, params) -> np.ndarray:
        """The adversary's transition tensor (S, A, S); terminal states stay absorbing."""
        S, A = self.n_states, self.n_actions
        q = self.probs(params)
        P = np.bincount(self._flat_next, weights=q.ravel(), minlength=S * A * S).reshape(S, A, S)
        ts = np.flatnonzero(self.terminal)
        if ts.size:
            P[ts] = 0.0
            P[ts, :, ts] = 1.0
        return P


class TabularAdversary(_AdversaryMixin, _SoftmaxTable):
    """Tabular softmax adversary: logits (S*A, O), row ``s * A + a``."""

    def __init__(self, model: TabularCMDP):
        self._setup_adversary(model)
        _SoftmaxTable.__init__(self, model.n_states * model.n_actions, self.n_outcomes)

    def logits_from_kernel(self, P, floor: float = 1e-3) -> np.ndarray:
        """Logits that reproduce a kernel P (S, A, S) as closely as the outcomes allow.

        The probability of each next state is shared equally among the outcomes that
        reach it; probabilities are floored at ``floor`` (then renormalised) so the
        logits stay finite.
        """
        S, A = self.n_states, self.n_actions
        floor = check_real(floor, "floor", 0.0, 1.0, low_open=True, high_open=True,
                           hint=" (the smallest probability kept, e.g. 1e-3)")
        P = as_float_array(P, "P", "give an (S, A, S) kernel", shape=(S, A, S),
                           axes=("s", "a", "s'"))
        out = self.outcomes
        mult = np.zeros((S, A, S))
        ii, jj = np.indices(out.shape[:2])
        np.add.at(mult, (ii[..., None], jj[..., None], out), 1.0)
        q = np.take_along_axis(P, out, axis=2) / np.take_along_axis(mult, out, axis=2)
        q = np.maximum(q, floor)
        q /= q.sum(axis=2, keepdims=True)
        return np.log(q).reshape(S * A, self.n_outcomes)


class MLPAdversary(_AdversaryMixin, _SoftmaxMLP):
    """MLP adversary on (scaled state features, scaled action index)."""

    def __init__(self, model: TabularCMDP, hidden: int = DEFAULT_HIDDEN, feature_scale=None,
                 action_scale=None):
        self._setup_adversary(model)
        _SoftmaxMLP.__init__(
            self, adversary_inputs(model, feature_scale, action_scale), self.n_outcomes, hidden
        )


# =========================================================================== resolution
def _infer_hidden(params, n_inputs: int, n_outputs: int, what: str) -> int:
    n = int(np.asarray(params).size)
    H = MLP.hidden_from_count(n, n_inputs, n_outputs)
    if H is None:
        raise ModelError(
            f"{what} MLP parameters have length {n}, which fits no hidden width for "
            f"{n_inputs} inputs and {n_outputs} outputs (length = H*({n_inputs}+1+"
            f"{n_outputs}) + {n_outputs}); pass a parametrisation object such as "
            f"MLP{what.capitalize()}(model, hidden=H) instead of the string 'mlp'"
        )
    return H


def _resolve(model: TabularCMDP, parametrisation, params, hidden, side: str):
    """Shared body of :func:`make_policy` and :func:`make_adversary`."""
    if side == "policy":
        tabular, mlp = TabularPolicy, MLPPolicy
        arg, shape = "parametrisation", "tabular logits (S, A)"
        n_in = model.state_features.shape[1]
        n_out = model.n_actions
        check = "vjp"
    else:
        tabular, mlp = TabularAdversary, MLPAdversary
        arg, shape = "adversary_parametrisation", "tabular logits (S*A, O)"
        n_in = model.state_features.shape[1] + 1
        n_out = adversary_outcomes(model).shape[2]
        check = "kernel"
    if isinstance(parametrisation, str):
        name = parametrisation.lower()
        if name in _TABULAR_NAMES:
            return tabular(model)
        if name in _DIRECT_NAMES and side == "policy":
            return DirectPolicy(model)
        if name in _MLP_NAMES:
            if hidden is None:
                hidden = (DEFAULT_HIDDEN if params is None
                          else _infer_hidden(params, n_in, n_out, side))
            return mlp(model, hidden=hidden)
        direct = ", 'direct' (probabilities (S, A))" if side == "policy" else ""
        raise ModelError(
            f"unknown {side} parametrisation {parametrisation!r}; use 'softmax' ({shape}), "
            f"'mlp'{direct}, or an object such as {mlp.__name__}(model, hidden=16)"
        )
    obj = parametrisation
    if getattr(obj, "side", None) != side or not hasattr(obj, check):
        raise ModelError(
            f"{arg} must be 'softmax', 'mlp' or a{'n' if side == 'adversary' else ''} {side} "
            f"parametrisation ({tabular.__name__}, {mlp.__name__}), got {type(obj).__name__}"
        )
    if (obj.n_states, obj.n_actions) != (model.n_states, model.n_actions):
        raise ModelError(
            f"the {side} parametrisation was built for S={obj.n_states}, A={obj.n_actions} "
            f"but the model has S={model.n_states}, A={model.n_actions}; build it from "
            f"this model"
        )
    return obj


def make_policy(model: TabularCMDP, parametrisation="softmax", params=None,
                hidden: int | None = None):
    """Resolve a policy parametrisation: "softmax" (alias "tabular"), "mlp", "direct" or
    an object.

    With "mlp" the hidden width is ``hidden``, else inferred from ``params``' length,
    else 100.  An object (e.g. :class:`MLPPolicy`) is returned after a size check.
    """
    return _resolve(model, parametrisation, params, hidden, "policy")


def make_adversary(model: TabularCMDP, parametrisation="softmax", params=None,
                   hidden: int | None = None):
    """Resolve an adversary parametrisation: "softmax" (alias "tabular"), "mlp" or an object.

    As :func:`make_policy`; the adversary's MLP has F + 1 inputs and one output per
    outcome.
    """
    return _resolve(model, parametrisation, params, hidden, "adversary")
