"""What the training loop receives, by name: its configuration, its state and its records.

The compiled loop (:mod:`rcmdp_exact.learners.loop`) and its numpy reference
(:mod:`rcmdp_exact.learners.reference`) take the same named tuples (numba compiles
attribute access on a named tuple to a field read, so names cost nothing per step):

* :class:`LoopConfig`: every setting the loop reads, built from the validated
  :class:`~rcmdp_exact.learners.Settings` by :func:`loop_config` (the only place a
  setting's name becomes the loop's code);
* :class:`LoopState`: the arrays the loop updates in place (parameters, Adam moments,
  multipliers, counters);
* :class:`Records`: one row per episode of a chunk.

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
    "ADV_VISITED",
    "COUNTERS",
    "ENT_GRADIENT",
    "ENT_WEIGHT",
    "FIXED",
    "FORM_MIXTURE",
    "FORM_SOFTMAX",
    "OBJ_CONSTRAINT",
    "OBJ_LAGRANGIAN",
    "OBJ_VALUE",
    "SCHED_GRADIENT",
    "SCHED_NONE",
    "SCHED_STEP",
    "SGD",
    "SIGNAL_CORRECTED",
    "SIGNAL_PRINTED",
    "WORST",
    "LoopConfig",
    "LoopState",
    "Records",
    "loop_config",
]

# dynamics sources: the kernel is fixed for a chunk, the worst case of the critic's values,
# or the adversary
FIXED, WORST, ADVERSARY = 0, 1, 2
# multiplier updates, schedules, entropy forms, adversary signals, objectives
ADAM_LOG, SGD = 0, 1
SCHED_GRADIENT, SCHED_STEP, SCHED_NONE = 0, 1, 2
ENT_WEIGHT, ENT_GRADIENT = 0, 1
SIGNAL_PRINTED, SIGNAL_CORRECTED = 0, 1
# lambda_adv signals: the visited pair (paper), the batch's mean excess, its mean hinge
ADV_VISITED, ADV_BATCH, ADV_BATCH_HINGE = 0, 1, 2
# adversary forms: softmax over the outcomes (paper), mixture with the nominal
FORM_SOFTMAX, FORM_MIXTURE = 0, 1
OBJ_VALUE, OBJ_CONSTRAINT, OBJ_LAGRANGIAN = 0, 1, 2

#: The counters of ``LoopState.cnt``, in order (Adam steps of each learner, episodes,
#: environment steps).
COUNTERS = ("t_pol", "t_adv", "t_critic", "t_lam", "t_lamadv", "episode", "steps")


class LoopConfig(NamedTuple):
    """Every setting the training loop reads (see :func:`loop_config`)."""

    horizon: int
    dynamics: int
    learn_multiplier: bool
    multiplier_update: int
    schedule: int
    schedule_every: int
    entropy_form: int
    discount_weight: bool
    adversary_signal: int
    adversary_start: int
    adversary_batch: int
    train_critic: bool
    objective: int
    hidden: int
    step_budget: int
    multiplier_episode: bool
    adversary_multiplier_signal: int
    multiplier_start: int
    adversary_baseline: bool
    mixture: bool
    gamma: float
    lr_policy: float
    lr_multiplier: float
    lr_adversary: float
    lr_adversary_multiplier: float
    lr_critic: float
    entropy: float
    lambda_max: float
    beta1: float
    beta2: float
    eps: float
    adversary_margin: float


class LoopState(NamedTuple):
    """Everything the loop updates in place (parameters, Adam moments, counters)."""

    theta: np.ndarray
    m_th: np.ndarray
    v_th: np.ndarray
    psi: np.ndarray
    m_ps: np.ndarray
    v_ps: np.ndarray
    phi: np.ndarray
    m_ph: np.ndarray
    v_ph: np.ndarray
    lam: np.ndarray
    loglam: np.ndarray
    m_lam: np.ndarray
    v_lam: np.ndarray
    lamadv: np.ndarray
    loglamadv: np.ndarray
    m_la: np.ndarray
    v_la: np.ndarray
    cnt: np.ndarray


class Records(NamedTuple):
    """Record arrays of one chunk of episodes (row i: episode i of the chunk)."""

    length: np.ndarray
    ret: np.ndarray
    cost: np.ndarray
    lam: np.ndarray
    lamadv: np.ndarray
    dev: np.ndarray
    inside: np.ndarray
    steps: np.ndarray

    @classmethod
    def empty(cls, n: int, K: int) -> Records:
        return cls(length=np.zeros(n, dtype=np.int64), ret=np.zeros(n), cost=np.zeros((n, K)),
                   lam=np.zeros((n, K)), lamadv=np.zeros(n), dev=np.zeros(n),
                   inside=np.zeros(n), steps=np.zeros(n, dtype=np.int64))

    def head(self, n: int) -> dict:
        """The first n rows under the names of the training records."""
        return {"length": self.length[:n], "return": self.ret[:n], "cost": self.cost[:n],
                "lam": self.lam[:n], "lam_adv": self.lamadv[:n],
                "adv_deviation": self.dev[:n], "adv_inside": self.inside[:n],
                "steps": self.steps[:n]}


_CODES = {
    "multiplier_update": {"adam-log": ADAM_LOG, "sgd": SGD},
    "schedule": {"gradient": SCHED_GRADIENT, "step": SCHED_STEP, "none": SCHED_NONE},
    "entropy_form": {"weight": ENT_WEIGHT, "gradient": ENT_GRADIENT},
    "adversary_signal": {"printed": SIGNAL_PRINTED, "corrected": SIGNAL_CORRECTED},
    "objective": {"value": OBJ_VALUE, "constraint": OBJ_CONSTRAINT,
                  "lagrangian": OBJ_LAGRANGIAN, None: OBJ_VALUE},
    "adversary_multiplier_signal": {"visited": ADV_VISITED, "batch": ADV_BATCH,
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
        lr_critic=float(s.lr_critic), entropy=float(s.entropy), lambda_max=float(s.lambda_max),
        beta1=0.9, beta2=0.999, eps=1e-8, adversary_margin=float(s.adversary_margin),
    )
