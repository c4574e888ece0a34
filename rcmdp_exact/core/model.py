r"""The tabular constrained MDP: one immutable object with axis order ``(s, a, s')``.

A :class:`TabularCMDP` holds

* ``P``  (S, A, S)   transition probabilities :math:`P(s' \mid s, a)`;
* ``R``  (S, A, S)   reward of the transition :math:`(s, a, s')`;
* ``C``  (S, A, S, K) the K constraint costs of the transition;
* ``d``  (K,)        budgets, ``gamma`` the discount, ``p0`` (S,) the start distribution;
* ``horizon``        the episode length T of the test metric (or ``None``);
* ``terminal``       (S,) bool: absorbing states in which nothing more is earned.

Rewards and costs may depend on the next state (Safe Navigation charges the cell
entered).  The expected one-step quantities are derived, never stored twice:

.. math::

    r(s, a) = \sum_{s'} P(s' \mid s, a) R(s, a, s'), \qquad
    c_k(s, a) = \sum_{s'} P(s' \mid s, a) C(s, a, s', k),

with both set to zero in terminal states.

Large sparse models (for example a grid of :math:`10^5` cells) are built from a
``scipy.sparse`` matrix of shape (S*A, S) with rewards and costs that depend on
``(s, a)`` only; the dense ``P`` view is then refused above :data:`DENSE_LIMIT`
entries and the solvers use :attr:`TabularCMDP.P_sparse`.

Every check made when a model is built raises :class:`ModelError` (the package's
:class:`~rcmdp_exact.InputError`, a :class:`ValueError`) whose message names the culprit
(the argument, the entry, its value) and says how to fix it; the checks themselves live
in :mod:`rcmdp_exact.core.model_checks` (which facts make a model, and the checks of a
policy or a start distribution that solvers call) on top of the facts of
:mod:`rcmdp_exact._checks`.  New dynamics make a new model
(:meth:`TabularCMDP.with_transitions`; ``check=False`` for a trusted kernel is a cheap
copy).  Models are saved to ``.npz`` without pickle (:meth:`TabularCMDP.save`; the file
format: :mod:`rcmdp_exact.core.model_io`).

Conversions (:mod:`rcmdp_exact.core.conversions`): :meth:`TabularCMDP.to_mdptoolbox`
(``P[a, s, s']``, ``R[s, a]``) and :meth:`TabularCMDP.to_quantecon` (``R[s, a]``,
``Q[s, a, s']``, or the sparse state-action-pair form); models in from a Gymnasium
toy-text environment, a QuantEcon ``DiscreteDP`` or pymdptoolbox arrays
(:meth:`TabularCMDP.from_gymnasium`, :meth:`TabularCMDP.from_quantecon`,
:meth:`TabularCMDP.from_mdptoolbox`).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from .._checks import (
    InputError,
    as_array,
    as_float_array,
    check_indices,
    check_limit,
    check_nonnegative,
    check_real,
    check_type,
    readonly,
)
from .model_checks import (
    TRANSITION_AXES,
    ModelError,
    check_budgets,
    check_dense_transitions,
    check_labels,
    check_model_size,
    check_multipliers,
    check_outcomes,
    check_p0,
    check_sparse_transitions,
    check_state_features,
    check_terminal,
    check_terminal_absorbing,
    check_transition_rows,
    per_pair_or_transition,
)

__all__ = [
    "DENSE_LIMIT",
    "TabularCMDP",
    "check_model",
]

#: Largest number of entries (S*A*S) for which a sparse model offers a dense ``P``.
DENSE_LIMIT = 50_000_000


# --------------------------------------------------------------------------- the model

#: The toy-text environments whose table the conversion reads (id prefixes).
TOY_TEXT = ("FrozenLake", "CliffWalking", "Taxi")


def _make_gymnasium(env_id: str):
    """``gymnasium.make(env_id)``, with a message that lists the toy-text ids this
    Gymnasium registers when the id is unknown (Gymnasium 1.x renamed
    ``CliffWalking-v0`` to ``CliffWalking-v1``)."""
    try:
        import gymnasium
    except ImportError:
        raise ImportError(f"a Gymnasium id ({env_id!r}) needs gymnasium: pip install "
                          f"\"rcmdp_exact[gym]\"") from None
    known = sorted(k for k in gymnasium.registry
                   if k.split("/")[-1].startswith(TOY_TEXT) and "/" not in k)
    if env_id not in gymnasium.registry:
        stem = env_id.split("-v")[0]
        close = [k for k in known if k.split("-v")[0] == stem]
        hint = f"; this Gymnasium names it {close[0]!r}" if close else ""
        raise InputError(f"Gymnasium has no environment {env_id!r}{hint}; the toy-text "
                         f"ones it registers: {', '.join(known)}")
    return gymnasium.make(env_id)


class TabularCMDP:
    """An immutable finite constrained MDP with next-state-dependent rewards and costs.

    Parameters
    ----------
    P : array_like (S, A, S) or scipy.sparse matrix (S*A, S)
        Transition probabilities; row ``s*A + a`` of a sparse matrix is
        :math:`P(\\cdot \\mid s, a)`.
    R : array_like (S, A, S) or (S, A)
        Reward per transition; an (S, A) array means the reward does not depend on
        the next state (it is broadcast, not copied).
    C : array_like (S, A, S, K), (S, A, K), or ``None``
        Costs per transition; (S, A, K) means they do not depend on the next state.
        ``None`` means no constraint (K = 0).
    d : array_like (K,)
        Budgets of the discounted expected costs.
    gamma : float in [0, 1]
        Discount factor.
    p0 : array_like (S,) or int, optional
        Start distribution, or a start state index (default state 0).
    horizon : int, optional
        Episode length T used by the undiscounted test metric.
    terminal : array_like (S,) of bool, or a list of state indices, optional
        Absorbing states (``P[t, a, t] = 1`` for every action); rewards and costs
        earned in them are ignored.
    state_labels, action_labels, cost_labels : sequences of str, optional
        Names used in messages and reports.
    name : str, optional
        A short name of the model.
    outcomes : array_like (S, A, O) of int, optional
        For models built from outcomes (see :meth:`from_outcomes`): the next state of
        each outcome, kept so that uncertainty sets can be built over outcomes.
    state_features : array_like (S, F), optional
        Input features of each state for function approximators (the MLP policy and
        adversary); the learners scale them as documented there.  Default: the index.

    Raises
    ------
    ModelError
        On any invalid input; the message names the culprit and how to fix it.  Before
        any copy: the memory the model would hold, read from the shapes it is given, is
        at most :data:`rcmdp_exact._checks.MAX_INPUT_BYTES` (8 GiB), and the stored
        indices of a sparse ``P`` lie inside its shape (scipy reads out of bounds on
        one that does not).

    Notes
    -----
    New dynamics make a new model: :meth:`with_transitions` (or :meth:`replace` for
    any other field).  The inputs are copied, attributes cannot be reassigned and
    every array returned is read-only; copies are the model itself and pickling
    rebuilds it through the constructor.

    Examples
    --------
    Two states; in state 0, action 1 reaches the absorbing goal (state 1) and earns 1:

    >>> import numpy as np
    >>> P = np.zeros((2, 2, 2))
    >>> P[0, 0, 0] = P[0, 1, 1] = P[1, :, 1] = 1.0
    >>> m = TabularCMDP(P, R=[[0.0, 1.0], [0.0, 0.0]], terminal=[1], gamma=0.9)
    >>> m.n_states, m.n_actions, m.n_constraints
    (2, 2, 0)
    >>> m.r[0]  # expected one-step reward of each action in state 0
    array([0., 1.])
    """

    __slots__ = (
        "_C",
        "_C_sa",
        "_P",
        "_P_sparse",
        "_R",
        "_R_sa",
        "_action_labels",
        "_cache",
        "_cost_labels",
        "_d",
        "_features",
        "_frozen",
        "_gamma",
        "_horizon",
        "_name",
        "_outcomes",
        "_p0",
        "_state_labels",
        "_terminal",
    )

    def __init__(
        self,
        P,
        R,
        C=None,
        d=None,
        gamma: float = 0.99,
        p0=0,
        horizon: int | None = None,
        terminal=None,
        state_labels=None,
        action_labels=None,
        cost_labels=None,
        name: str | None = None,
        outcomes=None,
        state_features=None,
        normalize: bool = False,
    ):
        object.__setattr__(self, "_frozen", False)
        self._cache = {}
        check_model_size(P, R, C)  # before any copy: the shapes declare the memory
        # -- transitions
        if sp.issparse(P):
            self._P_sparse, S, A = check_sparse_transitions(P, R, normalize)
            self._P = None
        else:
            Pd = check_dense_transitions(P, normalize)
            S, A = Pd.shape[:2]
            self._P = readonly(Pd.copy())
            self._P_sparse = None
        sparse = self._P is None
        # -- rewards and costs: per pair (S, A[, K]) or per transition (S, A, S[, K])
        R_arr = as_float_array(R, "R", "give an (S, A) or (S, A, S) array of rewards",
                               finite=False)
        per_pair = (S, A) if sparse else None
        self._R_sa, self._R = per_pair_or_transition(R_arr, "R", (S, A), (S, A, S), per_pair)
        C_arr = (np.zeros((S, A, 0)) if C is None else
                 as_float_array(C, "C", "give an (S, A, S, K) or (S, A, K) array of costs",
                                finite=False))
        K = C_arr.shape[-1] if C_arr.ndim in (3, 4) else 0
        self._C_sa, self._C = per_pair_or_transition(C_arr, "C", (S, A, K), (S, A, S, K),
                                                     (S, A, K) if sparse else None)
        self._d = readonly(check_budgets(d, K))
        # -- discount, start, horizon, terminal
        self._gamma = check_real(gamma, "gamma", 0.0, 1.0,
                                 hint="; use e.g. 0.99, or 1.0 with terminal states or a "
                                      "horizon")
        self._p0 = readonly(check_p0(p0, S))
        self._horizon = None if horizon is None else check_limit(
            horizon, "horizon", "horizon", hint=" (a number of steps) or None")
        self._terminal = readonly(check_terminal(terminal, S))
        self._state_labels = check_labels(state_labels, S, "state_labels")
        self._action_labels = check_labels(action_labels, A, "action_labels")
        self._cost_labels = check_labels(cost_labels, K, "cost_labels")
        self._name = None if name is None else str(name)
        self._outcomes = None if outcomes is None else check_outcomes(outcomes, self.P_sparse,
                                                                      S, A)
        self._features = (None if state_features is None else
                          check_state_features(state_features, S))
        check_terminal_absorbing(self._P, self._P_sparse, self._terminal, self._state_labels)
        self._frozen = True

    # ----------------------------------------------------------------- immutability
    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(
                "TabularCMDP is immutable; build a new model, e.g. "
                "model.with_transitions(P) for new dynamics"
            )
        object.__setattr__(self, name, value)

    # ----------------------------------------------------------------- sizes
    @property
    def n_states(self) -> int:
        """Number of states S."""
        return (self._P if self._P is not None else self._P_sparse).shape[-1]

    @property
    def n_actions(self) -> int:
        """Number of actions A."""
        return (self._R_sa if self._R_sa is not None else self._R).shape[1]

    @property
    def n_constraints(self) -> int:
        """Number of constraints K."""
        return self._d.shape[0]

    S = n_states
    A = n_actions
    K = n_constraints

    # ----------------------------------------------------------------- stored arrays
    @property
    def P(self) -> np.ndarray:
        """Transition tensor (S, A, S), read-only."""
        if self._P is None:
            S, A = self.n_states, self.n_actions
            if S * A * S > DENSE_LIMIT:
                raise ModelError(
                    f"this sparse model has S*A*S = {S * A * S:,} entries, above the "
                    f"dense limit {DENSE_LIMIT:,}; use model.P_sparse (shape (S*A, S))"
                )
            if "P" not in self._cache:
                self._cache["P"] = readonly(self._P_sparse.toarray().reshape(S, A, S))
            return self._cache["P"]
        return self._P

    @property
    def P_sparse(self) -> sp.csr_array:
        """Transitions as a CSR matrix (S*A, S): row ``s*A + a`` is P(.|s, a).

        Canonical (sorted indices, no duplicates, no stored zeros) and read-only.
        """
        if self._P_sparse is None:
            if "P_sparse" not in self._cache:
                S, A = self.n_states, self.n_actions
                Ps = sp.csr_array(self._P.reshape(S * A, S))
                Ps.sort_indices()
                for arr in (Ps.data, Ps.indices, Ps.indptr):
                    arr.flags.writeable = False
                self._cache["P_sparse"] = Ps
            return self._cache["P_sparse"]
        return self._P_sparse

    @property
    def R(self) -> np.ndarray:
        """Reward per transition (S, A, S), read-only (a broadcast view if R(s, a))."""
        if self._R is None:
            S, A = self.n_states, self.n_actions
            return np.broadcast_to(self._R_sa[:, :, None], (S, A, S))
        return self._R

    @property
    def C(self) -> np.ndarray:
        """Costs per transition (S, A, S, K), read-only (broadcast view if C(s, a))."""
        if self._C is None:
            S, A, K = self.n_states, self.n_actions, self.n_constraints
            return np.broadcast_to(self._C_sa[:, :, None, :], (S, A, S, K))
        return self._C

    @property
    def d(self) -> np.ndarray:
        """Budgets (K,)."""
        return self._d

    @property
    def gamma(self) -> float:
        """Discount factor."""
        return self._gamma

    @property
    def p0(self) -> np.ndarray:
        """Start distribution (S,)."""
        return self._p0

    @property
    def horizon(self) -> int | None:
        """Episode length T of the undiscounted test metric, or None."""
        return self._horizon

    @property
    def terminal(self) -> np.ndarray:
        """Boolean mask (S,) of absorbing terminal states."""
        return self._terminal

    @property
    def state_labels(self) -> tuple[str, ...] | None:
        """Names of the states (S,), or None."""
        return self._state_labels

    @property
    def action_labels(self) -> tuple[str, ...] | None:
        """Names of the actions (A,), or None."""
        return self._action_labels

    @property
    def cost_labels(self) -> tuple[str, ...] | None:
        """Names of the constraints (K,), or None."""
        return self._cost_labels

    @property
    def name(self) -> str | None:
        """A short name of the model, or None."""
        return self._name

    @property
    def outcomes(self) -> np.ndarray | None:
        """Next state of each outcome (S, A, O), for models built from outcomes."""
        return self._outcomes

    @property
    def state_features(self) -> np.ndarray:
        """Input features (S, F) of function approximators; the state index if unset."""
        if self._features is None:
            return np.arange(self.n_states, dtype=np.float64)[:, None]
        return self._features

    @property
    def is_sparse(self) -> bool:
        """True when the transitions are stored as a sparse matrix."""
        return self._P is None

    @property
    def reward_depends_on_next_state(self) -> bool:
        """True when R was given per transition (S, A, S) rather than per pair."""
        return self._R is not None

    @property
    def cost_depends_on_next_state(self) -> bool:
        """True when C was given per transition (S, A, S, K) rather than per pair."""
        return self._C is not None

    # ----------------------------------------------------------------- derived
    def _expected(self, key: str, per_pair, per_transition, subscripts: str) -> np.ndarray:
        """E_{s'~P}[X(s, a, s')] (cached, read-only, zero in terminal states) of a reward
        or cost given per pair or per transition."""
        if key not in self._cache:
            if per_transition is None:
                x = per_pair.copy()
            else:
                x = np.einsum(subscripts, self._P, per_transition)
            x[self._terminal] = 0.0
            self._cache[key] = readonly(x)
        return self._cache[key]

    @property
    def r(self) -> np.ndarray:
        """Expected reward r(s, a) (S, A); zero in terminal states."""
        return self._expected("r", self._R_sa, self._R, "ijk,ijk->ij")

    @property
    def c(self) -> np.ndarray:
        """Expected costs c(s, a, k) (S, A, K); zero in terminal states."""
        return self._expected("c", self._C_sa, self._C, "ijk,ijkl->ijl")

    # ----------------------------------------------------------------- constructors
    @classmethod
    def from_outcomes(cls, next_state, prob, R, C=None, **kwargs) -> TabularCMDP:
        r"""Build a model from the outcome form.

        Outcome ``o`` of ``(s, a)`` leads to state ``next_state[s, a, o]`` with
        probability ``prob[s, a, o]``; outcomes that reach the same state (moves
        clipped at a wall) are merged:

        .. math::

            P(s' \mid s, a) = \sum_{o:\ \mathrm{next\_state}[s, a, o] = s'}
            \mathrm{prob}[s, a, o].

        Parameters
        ----------
        next_state : int array (S, A, O)
            The next state reached by each of O outcomes of ``(s, a)`` (several outcomes
            may reach the same state, e.g. moves clipped at a wall).
        prob : array (S, A, O)
            Outcome probabilities: >= 0, each (s, a) row summing to 1.
        R : array (S, A), (S, A, S) or (S,)
            Reward; an (S,) array is the reward of *entering* each state.  An
            (S, A, S) array is indexed by the next *state*, not by the outcome.
        C : array (S, A, K), (S, A, S, K), (S, K) or (S,), optional
            Costs; an (S, K) or (S,) array is the cost of *entering* each state.
        **kwargs
            Passed to :class:`TabularCMDP` (``d``, ``gamma``, ``p0``, ...).

        The outcome map is kept as :attr:`outcomes`.
        """
        ns = as_array(next_state, "next_state", "give an integer array (S, A, O)")
        if ns.ndim != 3 or not np.issubdtype(ns.dtype, np.integer) or 0 in ns.shape:
            raise ModelError(
                f"next_state must be an integer array (S, A, O) with S, A, O >= 1, got "
                f"dtype {ns.dtype} and shape {ns.shape}"
            )
        S, A, O = ns.shape
        # the kernel (S, A, S) is built here, before the constructor checks its size
        check_model_size(SimpleNamespace(shape=(S, A, S)), R, C)
        ns = check_indices(ns, "next_state", S, "state")
        pr = as_float_array(prob, "prob", "give (S, A, O) outcome probabilities",
                            shape=(S, A, O), axes=("s", "a", "o"))
        check_nonnegative(pr, "prob", "outcome probabilities")
        P = np.zeros((S, A, S))
        ii, jj, _ = np.indices((S, A, O))
        np.add.at(P, (ii, jj, ns), pr)
        R_arr = as_float_array(R, "R", "give an (S,), (S, A) or (S, A, S) array of rewards",
                               finite=False)
        if R_arr.shape == (S,):
            R_arr = np.broadcast_to(R_arr[None, None, :], (S, A, S))
        if C is not None:
            C_arr = as_float_array(
                C, "C", "give an (S,), (S, K), (S, A, K) or (S, A, S, K) array of costs",
                finite=False,
            )
            if C_arr.shape == (S,):
                C_arr = np.broadcast_to(C_arr[None, None, :, None], (S, A, S, 1))
            elif C_arr.ndim == 2 and C_arr.shape[0] == S:
                C_arr = np.broadcast_to(C_arr[None, None, :, :], (S, A, S, C_arr.shape[1]))
            C = C_arr
        return cls(P, R_arr, C, outcomes=ns, **kwargs)

    @classmethod
    def from_gymnasium(cls, env, costs=None, d=None, gamma: float = 0.99, horizon="spec",
                       p0=None, name=None) -> TabularCMDP:
        r"""A model of a Gymnasium toy-text environment (FrozenLake, CliffWalking, Taxi).

        Reads ``env.unwrapped.P[s][a] = [(probability, next_state, reward, terminated),
        ...]``: entries with the same next state are merged (probabilities summed,
        rewards averaged with the probabilities as weights, so r(s, a) is the
        environment's); every state entered with ``terminated=True`` becomes a terminal
        state whose rows are zero-reward self-loops (checked to be exact for every
        episode); ``p0`` defaults to ``env.unwrapped.initial_state_distrib`` and the
        horizon (``"spec"``) to ``env.spec.max_episode_steps``.  ``env`` may also be an
        id (``"CliffWalking-v1"``), made with ``gymnasium.make``.  ``costs`` are an array
        ((S,) or (S, K) per entered state, (S, A, K), (S, A, S, K)) or a function
        ``costs(s, a, s_next)`` called on every transition of the support, or
        ``costs(s, a, s_next, reward, terminated)`` called on every entry of the table
        (a cost can then see the reward and the termination of a transition); ``d`` is
        required with them.  Details: :func:`rcmdp_exact.core.conversions.gymnasium_model_args`.

        Examples
        --------
        >>> import gymnasium
        >>> env = gymnasium.make("FrozenLake-v1")
        >>> m = TabularCMDP.from_gymnasium(env, costs=lambda s, a, t: float(t == 5), d=[0.1])
        >>> m.n_states, m.n_actions, m.horizon, np.flatnonzero(m.terminal).tolist()
        (16, 4, 100, [5, 7, 11, 12, 15])
        """
        from .conversions import gymnasium_model_args

        if isinstance(env, str):
            env = _make_gymnasium(env)
        return cls(**gymnasium_model_args(env, costs=costs, d=d, gamma=gamma,
                                          horizon=horizon, p0=p0, name=name))

    @classmethod
    def from_quantecon(cls, ddp, C=None, d=None, **kwargs) -> TabularCMDP:
        """A model of a QuantEcon ``DiscreteDP`` (or the tuple of :meth:`to_quantecon`).

        The transitions ``Q`` (dense (S, A, S), or the state-action-pair form with a
        dense or sparse ``Q``), the rewards ``R`` per pair and ``beta`` as ``gamma``;
        ``C``, ``d`` and ``kwargs`` (``p0``, ``horizon``, ...) in this class's
        convention.  Rewards of -inf (QuantEcon's infeasible actions) and missing pairs
        are refused.  ``from_quantecon(model.to_quantecon())`` reproduces ``P``, the
        expected rewards and ``gamma`` bit for bit.  Details:
        :func:`rcmdp_exact.core.conversions.quantecon_model_args`.
        """
        from .conversions import quantecon_model_args

        return cls(**quantecon_model_args(ddp, C=C, d=d, **kwargs))

    @classmethod
    def from_mdptoolbox(cls, P, R, gamma, C=None, d=None, **kwargs) -> TabularCMDP:
        """A model of pymdptoolbox arrays ``(P[a, s, s'], R)`` and the discount ``gamma``.

        ``P`` is (A, S, S) or a list of A matrices (S, S) (sparse ones give a sparse
        model); ``R`` is (S,), ``R[s, a]`` or ``R[a, s, s']`` (or a list of A matrices).
        ``C``, ``d`` and ``kwargs`` in this class's convention.
        ``from_mdptoolbox(*model.to_mdptoolbox(), model.gamma)`` reproduces ``P``, the
        expected rewards and ``gamma`` bit for bit.  Details:
        :func:`rcmdp_exact.core.conversions.mdptoolbox_model_args`.
        """
        from .conversions import mdptoolbox_model_args

        return cls(**mdptoolbox_model_args(P, R, gamma, C=C, d=d, **kwargs))

    def _constructor_args(self) -> dict:
        return dict(
            P=self._P if self._P is not None else self._P_sparse,
            R=self._R if self._R is not None else self._R_sa,
            C=self._C if self._C is not None else self._C_sa,
            d=self._d,
            gamma=self._gamma,
            p0=self._p0,
            horizon=self._horizon,
            terminal=self._terminal,
            state_labels=self._state_labels,
            action_labels=self._action_labels,
            cost_labels=self._cost_labels,
            name=self._name,
            outcomes=self._outcomes,
            state_features=self._features,
        )

    def replace(self, **changes) -> TabularCMDP:
        """A new model equal to this one except for the given constructor arguments.

        The new model is validated like any other (``ModelError`` on bad input).
        ``C=None`` (no constraints) also drops the cost labels unless ``cost_labels`` is
        given.
        """
        args = self._constructor_args()
        unknown = set(changes) - set(args)
        if unknown:
            raise TypeError(f"unknown model fields {sorted(unknown)}; valid: {sorted(args)}")
        if "C" in changes and changes["C"] is None and "cost_labels" not in changes:
            changes = dict(changes, cost_labels=None)
        args.update(changes)
        return TabularCMDP(**args)

    # immutable: copies are the object itself; pickling rebuilds (and re-validates)
    def __copy__(self) -> TabularCMDP:
        return self

    def __deepcopy__(self, memo) -> TabularCMDP:
        return self

    def __reduce__(self):
        return (_rebuild, (self._constructor_args(),))

    def with_transitions(self, P, outcomes=None, *, check: bool = True,
                         normalize: bool = False) -> TabularCMDP:
        """A new model with transitions ``P`` (S, A, S) and everything else unchanged.

        Only what depends on ``P`` is checked: its shape, its rows (:func:`check_transition
        _rows`, renormalised with ``normalize``), that terminal states stay absorbing, and
        that the support lies inside ``outcomes`` when given.  ``check=False`` trusts a
        ``P`` that is already a valid kernel of this model (for example a worst-case
        kernel of an :class:`~rcmdp_exact.L1Ball` of it) and only copies it: a kernel
        swap in a loop.  The outcome map is dropped unless given, since new dynamics
        need not respect it.  Rewards and costs per transition are kept; the expected
        ones are recomputed under the new ``P``.
        """
        S, A = self.n_states, self.n_actions
        if check:
            Pd = as_float_array(P, "P", "give an (S, A, S) array of probabilities",
                                shape=(S, A, S), axes=TRANSITION_AXES, finite=False)
            Pd = check_transition_rows(Pd, normalize=normalize)
        else:
            Pd = np.asarray(P, dtype=np.float64)
        new = object.__new__(TabularCMDP)
        for slot in self.__slots__:
            object.__setattr__(new, slot, getattr(self, slot))
        object.__setattr__(new, "_frozen", False)
        new._P = readonly(np.array(Pd))
        new._P_sparse = None
        new._cache = {}
        new._outcomes = None
        if check:
            check_terminal_absorbing(new._P, None, new._terminal, new._state_labels)
            if outcomes is not None:
                new._outcomes = check_outcomes(outcomes, new.P_sparse, S, A)
        elif outcomes is not None:
            new._outcomes = readonly(np.asarray(outcomes, dtype=np.int64))
        new._frozen = True
        return new

    # ----------------------------------------------------------------- files
    def save(self, path) -> Path:
        """Save the model to an ``.npz`` file (no pickle); :meth:`load` reads it back.

        Every field is stored exactly (float64 bits, labels as strings); a sparse model
        keeps its CSR arrays.  The suffix ``.npz`` is added when ``path`` has another
        one (or none); the file is written atomically.  Returns the path written.
        The format: :mod:`rcmdp_exact.core.model_io`.
        """
        from .model_io import save_model

        return save_model(self._constructor_args(), path)

    @classmethod
    def load(cls, path) -> TabularCMDP:
        """Read a model written by :meth:`save` (validated like any new model).

        ``path`` with or without the suffix ``.npz``.  A missing, foreign, truncated or
        invalid file is a :class:`~rcmdp_exact.LoadError` naming the path.
        """
        from .model_io import load_model

        return load_model(path, cls)

    # ----------------------------------------------------------------- conversions
    def scalarised_reward(self, lam=None) -> np.ndarray:
        """The Lagrangian reward r(s, a) - lam . c(s, a) as an (S, A) array."""
        lam = self.check_multipliers(lam)
        return self.r - self.c @ lam

    def check_multipliers(self, lam) -> np.ndarray:
        """Return ``lam`` as a (K,) float64 array of multipliers >= 0 (zeros if None).

        One number is broadcast to every constraint.
        """
        return check_multipliers(lam, self.n_constraints)

    def to_mdptoolbox(self, lam=None, sparse: bool = False):
        """Arrays in pymdptoolbox's convention: ``(P[a, s, s'], R[s, a])``.

        Parameters
        ----------
        lam : array (K,) or float, optional
            The reward is the Lagrangian reward :math:`r - \\lambda^\\top c`
            (:meth:`scalarised_reward`; plain ``r`` when ``lam`` is None), zero in
            terminal states.
        sparse : bool
            If True, ``P`` is a tuple of A ``scipy.sparse.csr_matrix`` of shape (S, S)
            (pymdptoolbox's list form), which never builds the dense tensor.

        Returns
        -------
        P : ndarray (A, S, S) or tuple of A sparse (S, S)
        R : ndarray (S, A)

        Notes
        -----
        pymdptoolbox takes the discount separately (``model.gamma``) and needs it in
        (0, 1] (and < 1 for most of its solvers).
        """
        from .conversions import mdptoolbox_arrays

        r = self.scalarised_reward(lam)
        return mdptoolbox_arrays(self.P_sparse if sparse else self.P, r, sparse)

    def to_quantecon(self, lam=None, sparse: bool = False):
        """Arrays in QuantEcon ``DiscreteDP``'s convention.

        Dense (default): ``(R[s, a], Q[s, a, s'], beta)`` for
        ``DiscreteDP(R, Q, beta)``.  With ``sparse=True`` the state-action-pair form
        ``(R[l], Q[l, s'], beta, s_indices, a_indices)`` with ``l = s*A + a`` and ``Q``
        a ``scipy.sparse.csr_matrix`` (S*A, S), for
        ``DiscreteDP(R, Q, beta, s_indices, a_indices)``; it never builds the dense
        tensor.  The reward is :meth:`scalarised_reward` (plain ``r`` when ``lam`` is
        None).  QuantEcon's policy evaluation needs ``beta < 1``.
        """
        from .conversions import quantecon_arrays

        r = self.scalarised_reward(lam)
        return quantecon_arrays(self.P_sparse if sparse else self.P, r, self.gamma, sparse)

    def __repr__(self) -> str:
        nm = f" {self._name!r}" if self._name else ""
        return (
            f"<TabularCMDP{nm}: S={self.n_states}, A={self.n_actions}, "
            f"K={self.n_constraints}, gamma={self.gamma}, horizon={self.horizon}, "
            f"terminal={int(self._terminal.sum())}{', sparse' if self.is_sparse else ''}>"
        )


def check_model(model) -> None:
    """Raise unless ``model`` is a :class:`~rcmdp_exact.TabularCMDP`."""
    check_type(model, "model", TabularCMDP,
               "build one with TabularCMDP(P, R, C, d, ...) or a constructor of "
               "rcmdp_exact.domains")


def _rebuild(args: dict) -> TabularCMDP:
    return TabularCMDP(**args)
