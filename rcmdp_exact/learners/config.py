"""What the training loop receives, by name: its configuration, state, buffers and records.

The compiled loop (:mod:`rcmdp_exact.learners.loop`) and its numpy reference
(:mod:`rcmdp_exact.learners.reference`) take the same named tuples (numba compiles
attribute access on a named tuple to a field read):

* :class:`LoopConfig`: every setting the loop reads, built from the validated
  :class:`~rcmdp_exact.learners.Settings` by :func:`loop_config` (the only place a
  setting's name becomes the loop's code: the integer codes below);
* :class:`LoopState`: the arrays the loop updates in place: each network's
  :class:`AdamState` (parameters and Adam moments), each multiplier's
  :class:`MultiplierState`, and the counters (``cnt[EPISODE]`` and the other indices
  below);
* :class:`Records`: one row per episode of a chunk;
* :class:`Workspace`: the compiled loop's buffers, allocated once per chunk, one named
  tuple per part (:class:`PolicyTables`, :class:`CriticTables`, :class:`KernelTables`,
  :class:`AdversaryTables`: each one's tables at the episode's parameters and its
  gradient buffers; :class:`DeviationBatch`, the adversary's batch of Algorithm 2;
  :class:`Episode`, the sampled steps and their returns).  Each phase of the loop
  takes the parts it reads: passing a named tuple to a compiled function costs a
  reference count per array it holds, so a per-step call passes few arrays.

This module imports numpy only, so the reference loop and the tests use it without
numba.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = [
    "ADAM_LOG",
    "ADVERSARY",
    "ADV_BATCH",
    "ADV_BATCH_HINGE",
    "COUNTERS",
    "ENT_GRADIENT",
    "ENT_WEIGHT",
    "EPISODE",
    "FIXED",
    "OBJ_CONSTRAINT",
    "OBJ_LAGRANGIAN",
    "SCHED_GRADIENT",
    "SCHED_NONE",
    "SCHED_STEP",
    "SGD",
    "SIGNAL_CORRECTED",
    "SIGNAL_PRINTED",
    "STEPS",
    "T_ADVERSARY",
    "T_CRITIC",
    "T_LAM",
    "T_LAM_ADV",
    "T_POLICY",
    "WORST",
    "AdamState",
    "AdversaryTables",
    "CriticTables",
    "DeviationBatch",
    "Episode",
    "KernelTables",
    "LoopState",
    "MultiplierState",
    "PolicyTables",
    "Workspace",
]

# The integer codes of LoopConfig's choices (numba compares integers; loop_config is the
# one place a setting's string becomes its code).
# dynamics sources: the kernel is fixed for a chunk, the worst case of the critic's values,
# or the adversary
FIXED, WORST, ADVERSARY = 0, 1, 2
# multiplier updates, schedules, entropy forms, adversary signals, objectives
ADAM_LOG, SGD = 0, 1
SCHED_GRADIENT, SCHED_STEP, SCHED_NONE = 0, 1, 2
ENT_WEIGHT, ENT_GRADIENT = 0, 1
SIGNAL_PRINTED, SIGNAL_CORRECTED = 0, 1
# lam_adv signals: the visited pair (paper), the batch's mean excess, its mean hinge
_ADV_VISITED, ADV_BATCH, ADV_BATCH_HINGE = 0, 1, 2
_OBJ_VALUE, OBJ_CONSTRAINT, OBJ_LAGRANGIAN = 0, 1, 2

#: The counters of ``LoopState.cnt``, in order (Adam steps of each learner, episodes,
#: environment steps); the loop reads them by the indices below.
COUNTERS = ("t_policy", "t_adversary", "t_critic", "t_lam", "t_lam_adv", "episode", "steps")
T_POLICY, T_ADVERSARY, T_CRITIC, T_LAM, T_LAM_ADV, EPISODE, STEPS = range(len(COUNTERS))


class LoopConfig(NamedTuple):
    """Every setting the training loop reads (built by :func:`loop_config`); choices are
    the integer codes of this module."""

    horizon: int
    """T, the episode length."""
    dynamics: int
    """FIXED (a kernel given per chunk), WORST (the ball's worst case of the critic's
    values, every episode) or ADVERSARY."""
    learn_multiplier: bool
    multiplier_update: int
    """ADAM_LOG or SGD (of lam and lam_adv)."""
    schedule: int
    """SCHED_GRADIENT, SCHED_STEP or SCHED_NONE."""
    schedule_every: int
    entropy_form: int
    """ENT_WEIGHT or ENT_GRADIENT."""
    discount_weight: bool
    adversary_signal: int
    """SIGNAL_PRINTED or SIGNAL_CORRECTED."""
    adversary_start: int
    adversary_batch: int
    train_critic: bool
    objective: int
    """_OBJ_VALUE, OBJ_CONSTRAINT or OBJ_LAGRANGIAN (what the worst case robustifies)."""
    hidden: int
    step_budget: int
    """Environment steps of the run (0: no budget)."""
    multiplier_episode: bool
    """The multipliers ascend C_0 - d (``multiplier_signal="episode"``), else C_t - d."""
    adversary_multiplier_signal: int
    """_ADV_VISITED, ADV_BATCH or ADV_BATCH_HINGE."""
    multiplier_start: int
    adversary_baseline: bool
    """The adversary's signal minus its expectation under the critic."""
    mixture: bool
    """``adversary_form="mixture"``."""
    gamma: float
    lr_policy: float
    lr_multiplier: float
    lr_adversary: float
    lr_adversary_multiplier: float
    lr_critic: float
    entropy: float
    lam_max: float
    beta1: float
    beta2: float
    eps: float
    adversary_margin: float


class AdamState(NamedTuple):
    """A network's parameter vector and its Adam moments (updated in place)."""

    params: np.ndarray
    m: np.ndarray
    v: np.ndarray


class MultiplierState(NamedTuple):
    """Multipliers (K,) (or the adversary's (1,)): their values, their logarithms
    (``"adam-log"``) and the Adam moments of the logarithms."""

    value: np.ndarray
    log: np.ndarray
    m: np.ndarray
    v: np.ndarray


class LoopState(NamedTuple):
    """Everything the loop updates in place: the policy (theta), the critic (psi), the
    adversary (phi), the multipliers and the adversary's, and the counters ``cnt``
    (:data:`COUNTERS`)."""

    policy: AdamState
    critic: AdamState
    adversary: AdamState
    lam: MultiplierState
    lam_adv: MultiplierState
    cnt: np.ndarray


class Records(NamedTuple):
    """Record arrays of one chunk of episodes (row i: episode i of the chunk)."""

    length: np.ndarray
    ret: np.ndarray
    cost: np.ndarray
    lam: np.ndarray
    lam_adv: np.ndarray
    dev: np.ndarray
    inside: np.ndarray
    steps: np.ndarray

    @classmethod
    def empty(cls, n: int, K: int) -> Records:
        return cls(length=np.zeros(n, dtype=np.int64), ret=np.zeros(n), cost=np.zeros((n, K)),
                   lam=np.zeros((n, K)), lam_adv=np.zeros(n), dev=np.zeros(n),
                   inside=np.zeros(n), steps=np.zeros(n, dtype=np.int64))

    def head(self, n: int) -> dict:
        """The first n rows under the names of the training records."""
        return {"length": self.length[:n], "return": self.ret[:n], "cost": self.cost[:n],
                "lam": self.lam[:n], "lam_adv": self.lam_adv[:n],
                "adv_deviation": self.dev[:n], "adv_inside": self.inside[:n],
                "steps": self.steps[:n]}



class PolicyTables(NamedTuple):
    """The policy's forward pass over the S states at the episode's parameters
    (pre-activations, hidden layer, logits, probabilities, their cumulative sums, each
    state's entropy, the output weights) and its gradient buffers (on one state's logits,
    on the parameters)."""

    pre: np.ndarray
    hidden: np.ndarray
    logits: np.ndarray
    prob: np.ndarray
    cdf: np.ndarray
    entropy: np.ndarray
    W2: np.ndarray
    logit_grad: np.ndarray
    grad: np.ndarray


class CriticTables(NamedTuple):
    """The critic's forward pass over the S states (``out`` (S, 1 + K): V_hat and the K
    C_hat) and its gradient buffers (on the outputs, on the parameters)."""

    pre: np.ndarray
    hidden: np.ndarray
    out: np.ndarray
    out_grad: np.ndarray
    grad: np.ndarray


class KernelTables(NamedTuple):
    """What the rollout samples next states from: the outcome probabilities (S*A, O) and
    their cumulative sums; and the worst case's weights ``w_c`` (K,) and robustified
    state quantity ``w_state`` (S,)."""

    prob: np.ndarray
    cdf: np.ndarray
    w_c: np.ndarray
    w_state: np.ndarray


class AdversaryTables(NamedTuple):
    """The adversary's forward pass over the S*A pairs (its softmax; ``mix`` the mixture
    weights min(1, alpha / 2)), its output weights at the rollout, each pair's L1
    distance to the nominal (``merged``: one pair's next-state row), and its gradient
    buffers (on one pair's logits, on the parameters, lam_adv's signal (1,))."""

    pre: np.ndarray
    hidden: np.ndarray
    logits: np.ndarray
    softmax: np.ndarray
    mix: np.ndarray
    W2: np.ndarray
    deviation: np.ndarray
    merged: np.ndarray
    logit_grad: np.ndarray
    grad: np.ndarray
    excess: np.ndarray


class DeviationBatch(NamedTuple):
    """The adversary's fresh batch of pairs (Algorithm 2): their indices and inputs, the
    forward pass at the current parameters (with those output weights, ``W2``) and the
    gradient on one row's logits."""

    pairs: np.ndarray
    X: np.ndarray
    pre: np.ndarray
    hidden: np.ndarray
    logits: np.ndarray
    prob: np.ndarray
    W2: np.ndarray
    logit_grad: np.ndarray


class Episode(NamedTuple):
    """One sampled episode (row t: step t) and the quantities of its backward pass:
    ``value`` V_t and ``cost_to_go`` C_t (T, K); ``cost_sum`` the undiscounted costs,
    ``cost_next`` C_{t+1} during the pass, ``cost_first`` C_0, ``excess`` the
    multipliers' signal minus the budget."""

    states: np.ndarray
    actions: np.ndarray
    outcomes: np.ndarray
    rewards: np.ndarray
    costs: np.ndarray
    value: np.ndarray
    cost_to_go: np.ndarray
    cost_sum: np.ndarray
    cost_next: np.ndarray
    cost_first: np.ndarray
    excess: np.ndarray


class Workspace(NamedTuple):
    """The compiled loop's buffers, allocated once per chunk."""

    policy: PolicyTables
    critic: CriticTables
    kernel: KernelTables
    adversary: AdversaryTables
    batch: DeviationBatch
    episode: Episode

_CODES = {
    "multiplier_update": {"adam-log": ADAM_LOG, "sgd": SGD},
    "schedule": {"gradient": SCHED_GRADIENT, "step": SCHED_STEP, "none": SCHED_NONE},
    "entropy_form": {"weight": ENT_WEIGHT, "gradient": ENT_GRADIENT},
    "adversary_signal": {"printed": SIGNAL_PRINTED, "corrected": SIGNAL_CORRECTED},
    "objective": {"value": _OBJ_VALUE, "constraint": OBJ_CONSTRAINT,
                  "lagrangian": OBJ_LAGRANGIAN, None: _OBJ_VALUE},
    "adversary_multiplier_signal": {"visited": _ADV_VISITED, "batch": ADV_BATCH,
                                    "batch-hinge": ADV_BATCH_HINGE},
    "dynamics": {"nominal": FIXED, "worst-case": WORST, "adversary": ADVERSARY},
}


def loop_config(s, algo, horizon: int, gamma: float, *, host_kernel: bool,
                train_critic: bool) -> LoopConfig:
    """The loop's configuration from validated settings ``s`` and the algorithm ``algo``.

    ``host_kernel``: the kernel of the worst-case algorithms is computed outside the loop
    (by exact robust evaluation, or by the LP inner method) and given to it as fixed for
    each episode; ``train_critic``: the critic is trained (worst case from a learned
    critic, or the adversary's critic baseline).
    """
    dyn = FIXED if host_kernel else _CODES["dynamics"][algo.dynamics]
    return LoopConfig(
        horizon=int(horizon), dynamics=int(dyn), learn_multiplier=bool(algo.learn_multiplier),
        multiplier_update=_CODES["multiplier_update"][s.multiplier_update],
        schedule=_CODES["schedule"][s.schedule], schedule_every=int(s.schedule_every),
        entropy_form=_CODES["entropy_form"][s.entropy_form],
        discount_weight=bool(s.discount_weight),
        adversary_signal=_CODES["adversary_signal"][s.adversary_signal],
        adversary_start=int(s.adversary_start), adversary_batch=int(s.adversary_batch),
        train_critic=bool(train_critic), objective=_CODES["objective"][algo.objective],
        hidden=int(s.hidden), step_budget=int(s.steps or 0),
        multiplier_episode=s.multiplier_signal == "episode",
        adversary_multiplier_signal=_CODES["adversary_multiplier_signal"][
            s.adversary_multiplier_signal],
        multiplier_start=int(s.multiplier_start),
        adversary_baseline=s.adversary_baseline == "critic",
        mixture=s.adversary_form == "mixture",
        gamma=float(gamma), lr_policy=float(s.lr_policy), lr_multiplier=float(s.lr_multiplier),
        lr_adversary=float(s.lr_adversary),
        lr_adversary_multiplier=float(s.lr_adversary_multiplier),
        lr_critic=float(s.lr_critic), entropy=float(s.entropy), lam_max=float(s.lam_max),
        beta1=0.9, beta2=0.999, eps=1e-8, adversary_margin=float(s.adversary_margin),
    )
