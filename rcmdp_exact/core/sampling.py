r"""The one rollout sampler: episodes from :math:`p_0` under a policy and a kernel.

Every sampled episode of the package comes from here (model estimation, the Monte Carlo
checks of the gradient estimators, the Gymnasium wrapper's next states) or follows the
same convention bit for bit (the learners' compiled loop, tested against
:func:`rollout`):

* an episode of at most T steps consumes exactly :math:`1 + 2T` uniforms of a
  :class:`numpy.random.Generator`; E episodes draw ``rng.random((E, 1 + 2T))`` (in
  blocks of rows, which gives the same numbers as one block);
* ``u[0]`` draws the start state from :math:`p_0`, ``u[1 + 2t]`` the action at step t
  from :math:`\pi(\cdot \mid s_t)`, ``u[2 + 2t]`` the outcome at step t from the
  kernel's row of :math:`(s_t, a_t)`;
* a draw is the inverse CDF (:func:`draw`): the number of cumulative probabilities
  :math:`\le u \cdot \mathrm{total}`, clipped to the last index, so an entry of
  probability 0 is never drawn;
* an episode ends after T steps, or on entering a terminal state (that transition is
  part of the episode); its remaining uniforms are unused.

So an episode depends only on its own row of uniforms: the same seed gives the same
episodes whatever the batch size or the backend.

Kernels come in the *outcome form*: outcome ``o`` of the pair (s, a) leads to state
``next_state[s, a, o]`` with probability ``prob[s, a, o]``.  A dense model is the form
with ``next_state[s, a, o] = o``; a model built from outcomes can be sampled over its
outcomes (navigation: the 5 offsets); a sparse model over the stored entries of each
row (:func:`kernel_outcomes`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._checks import (
    InputError,
    as_array,
    as_float_array,
    check_distributions,
    check_int,
    check_limit,
    check_memory,
    rng_from,
)
from ..names import MAX_ROLLOUT_BYTES
from .model import TabularCMDP, check_model
from .model_checks import check_policy

__all__ = [
    "Episodes",
    "draw",
    "draw_one",
    "kernel_outcomes",
    "rollout",
]


#: Bytes of one step of :class:`Episodes` (four int64 arrays and a bool mask):
#: :func:`rollout` refuses more than :data:`rcmdp_exact.names.MAX_ROLLOUT_BYTES` of them.
STEP_BYTES = 4 * 8 + 1


class Episodes(NamedTuple):
    """Sampled episodes, one row per episode and one column per step (E, T).

    Steps after the end of an episode (``alive`` False) hold the final state and draws
    that were never used; mask them with ``alive``.
    """

    states: np.ndarray
    """(E, T) int: the state at step t."""
    actions: np.ndarray
    """(E, T) int: the action taken at step t."""
    outcomes: np.ndarray
    """(E, T) int: the outcome drawn at step t (the next state for a dense kernel)."""
    next_states: np.ndarray
    """(E, T) int: the state reached after step t."""
    alive: np.ndarray
    """(E, T) bool: step t happened (the episode had not ended before it)."""
    lengths: np.ndarray
    """(E,) int: the number of steps of each episode."""


def uniforms(rng: np.random.Generator, n_episodes: int, horizon: int) -> np.ndarray:
    """The uniforms of ``n_episodes`` episodes of ``horizon`` steps: (E, 1 + 2T)."""
    return rng.random((int(n_episodes), 1 + 2 * int(horizon)))


def draw(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws, one per row: ``cdf`` (N, n) cumulative sums, ``u`` (N,) in [0, 1).

    Returns the number of entries of each row :math:`\\le u \\cdot` the row's total,
    clipped to ``n - 1``.
    """
    x = u * cdf[:, -1]
    return np.minimum((cdf <= x[:, None]).sum(axis=1), cdf.shape[1] - 1)


def draw_one(cdf, u):
    """:func:`draw` for one row (plain loops, so that numba can compile it as is)."""
    x = u * cdf[cdf.shape[0] - 1]
    k = 0
    n = cdf.shape[0]
    while k < n - 1 and cdf[k] <= x:
        k += 1
    return k


def kernel_outcomes(model: TabularCMDP, kernel=None, outcomes=None):
    """The outcome form ``(next_state, prob)`` (S, A, O) of a kernel.

    Parameters
    ----------
    model : TabularCMDP
    kernel : array (S, A, S) or (S, A, O), optional
        Transition probabilities: over next states (default ``model.P``), or over the
        ``outcomes`` when they are given.
    outcomes : int array (S, A, O), optional
        Next state of each outcome (``model.outcomes`` for the model's own outcome
        form).

    Returns
    -------
    next_state : int array (S, A, O)
    prob : float array (S, A, O)
    """
    S, A = model.n_states, model.n_actions
    if kernel is None and outcomes is None:
        if model.is_sparse:
            Ps = model.P_sparse
            counts = np.diff(Ps.indptr)
            O = max(int(counts.max()), 1)
            nxt = np.zeros((S * A, O), dtype=np.int64)
            prob = np.zeros((S * A, O))
            rows = np.repeat(np.arange(S * A), counts)
            cols = np.arange(Ps.nnz) - np.repeat(Ps.indptr[:-1], counts)
            nxt[rows, cols] = Ps.indices
            prob[rows, cols] = Ps.data
            return nxt.reshape(S, A, O), prob.reshape(S, A, O)
        return np.broadcast_to(np.arange(S)[None, None, :], (S, A, S)), model.P
    if outcomes is None:
        prob = as_float_array(kernel, "kernel", "give an (S, A, S) array of probabilities",
                              shape=(S, A, S), axes=("s", "a", "s'"))
        nxt = np.broadcast_to(np.arange(S)[None, None, :], (S, A, S))
    else:
        nxt = as_array(outcomes, "outcomes", "give an integer array (S, A, O) of next states")
        if nxt.ndim != 3 or nxt.shape[:2] != (S, A) or nxt.dtype.kind not in "iu" \
                or kernel is None or nxt.size == 0 or nxt.min() < 0 or nxt.max() >= S:
            raise InputError(
                f"outcomes must be an integer array (S, A, O) = ({S}, {A}, O) of states in "
                f"0..{S - 1}, with the outcome probabilities (S, A, O) as kernel; got "
                f"outcomes of dtype {nxt.dtype} and shape {nxt.shape}"
                f"{' and no kernel' if kernel is None else ''}"
            )
        nxt = nxt.astype(np.int64)
        prob = as_float_array(kernel, "kernel", "give (S, A, O) outcome probabilities",
                              shape=nxt.shape, axes=("s", "a", "o"))
    prob = check_distributions(prob, "kernel", ("s", "a", "o"))
    return nxt, prob


def rollout(model: TabularCMDP, policy, n_episodes: int, seed=None, *, horizon=None,
            kernel=None, outcomes=None, batch_size: int = 4096,
            progress=None) -> Episodes:
    r"""Sample episodes of a stationary policy (the package's one sampler).

    Episodes start in a state drawn from ``model.p0``, take actions from ``policy`` and
    move by the kernel; they stop after ``horizon`` steps or on entering a terminal
    state of the model.  All episodes run together, one vectorised step at a time, and
    follow the uniform convention of the module notes.

    Parameters
    ----------
    model : TabularCMDP
        Start distribution, terminal states and (by default) the kernel.
    policy : array (S, A) or int array (S,)
        Action probabilities (or one action per state).
    n_episodes : int >= 1
        With the horizon, at most :data:`rcmdp_exact.names.MAX_ROLLOUT_BYTES` of
        episodes (33 bytes per step) are held at once; more is refused before any work.
    seed : int, numpy.random.Generator or None
        Same seed, same episodes.
    horizon : int >= 1, optional
        Episode length T; default ``model.horizon``.
    kernel, outcomes : arrays, optional
        The dynamics, as in :func:`kernel_outcomes` (default: the model's own ``P``).
    batch_size : int >= 1
        Episodes simulated at once (does not change the result).
    progress : bool or None
        Show a progress bar over the batches (None: when standard error is a terminal).

    Returns
    -------
    Episodes
    """
    check_model(model)
    S, A = model.n_states, model.n_actions
    pi = check_policy(policy, S, A)
    E = check_int(n_episodes, "n_episodes", 1)
    T = model.horizon if horizon is None else horizon
    T = check_limit(T, "horizon", "horizon",
                    hint="; pass horizon=T or use a model with a horizon" if T is None else "")
    B = check_int(batch_size, "batch_size", 1)
    check_memory(E, STEP_BYTES * T, MAX_ROLLOUT_BYTES, "n_episodes",
                 f"episodes of T = {T:,} steps", "; for more, sample in several calls "
                 "that share one numpy.random.Generator (they continue one stream, and "
                 "the counts of collect_counts add up)", "rcmdp_exact.names.MAX_ROLLOUT_BYTES")
    rng = rng_from(seed)
    nxt, prob = kernel_outcomes(model, kernel, outcomes)
    from .._progress import progress_default

    return rollout_arrays(model.p0, model.terminal, pi, nxt, prob, E, T, rng, B,
                          progress_default(progress))


def rollout_arrays(p0, terminal, pi, nxt, prob, n_episodes: int, horizon: int,
                   rng: np.random.Generator, batch_size: int = 4096,
                   progress=None) -> Episodes:
    """:func:`rollout` on validated arrays (no checks): p0 (S,), terminal (S,) bool,
    pi (S, A), the outcome form ``nxt``, ``prob`` (S, A, O), and a Generator."""
    E, T = int(n_episodes), int(horizon)
    from .._progress import progress_default, tqdm

    S, A, O = nxt.shape
    cdf_p0 = np.cumsum(p0)[None, :]
    cdf_pi = np.cumsum(pi, axis=1)
    cdf_k = np.cumsum(prob, axis=2).reshape(S * A, O)
    flat_next = nxt.reshape(S * A, O)
    shape = (E, T)
    states = np.empty(shape, dtype=np.int64)
    actions = np.empty(shape, dtype=np.int64)
    outs = np.empty(shape, dtype=np.int64)
    next_states = np.empty(shape, dtype=np.int64)
    alive = np.empty(shape, dtype=bool)
    with tqdm(total=E, desc="rollouts", disable=not progress_default(progress),
              leave=False) as bar:
        for lo in range(0, E, batch_size):
            hi = min(E, lo + batch_size)
            u = uniforms(rng, hi - lo, T)
            s = draw(np.broadcast_to(cdf_p0, (hi - lo, S)), u[:, 0])
            live = ~terminal[s]
            for t in range(T):
                a = draw(cdf_pi[s], u[:, 1 + 2 * t])
                row = s * A + a
                o = draw(cdf_k[row], u[:, 2 + 2 * t])
                s2 = flat_next[row, o]
                states[lo:hi, t] = s
                actions[lo:hi, t] = a
                outs[lo:hi, t] = o
                next_states[lo:hi, t] = s2
                alive[lo:hi, t] = live
                s = np.where(live, s2, s)
                live = live & ~terminal[s]
            bar.update(hi - lo)
    return Episodes(states, actions, outs, next_states, alive, alive.sum(axis=1))
