"""A small deterministic stand-in for ``rcmdp_exact.learners.train`` (no tests here).

It follows the trainer contract of :func:`rcmdp_exact.protocol.run.run_one`: a few
exact projected-gradient steps on a tabular softmax policy (the exact Lagrangian
gradient of :func:`rcmdp_exact.policy_gradient`), the multiplier by projected gradient
ascent on [0, 500], a start drawn from ``seed``.  Each "episode" is one exact step; the
records have the contract's names (``length``, ``return``, ``cost`` (E, K),
``lambda``).  ``RCMDP_STANDIN_SLEEP`` (seconds) slows every call down without changing
its result (for the interruption tests); with ``RCMDP_STANDIN_MARK`` (a folder) each
call writes the file ``<pid>`` there when it starts to sleep, so that a test knows which
process is inside a job.
"""

import os
import time

import numpy as np

from rcmdp_exact import InputError, evaluate, policy_gradient
from rcmdp_exact.protocol.spec import ROBUST_ALGORITHMS


class StandinResult:
    def __init__(self, policy, records):
        self._policy = policy
        self.records = records

    def policy_table(self):
        return self._policy


def _softmax(theta):
    z = np.exp(theta - theta.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def standin_train(model, algorithm, *, uset=None, seed=0, episodes=5000, critic="learned",
                  gradient="sampled", inner="sort", multiplier_update="adam-log",
                  eval_every=100, true_model=None, progress=None, **extra):
    if algorithm in ROBUST_ALGORITHMS and uset is None:
        raise InputError(f"algorithm {algorithm!r} needs uset=")
    rng = np.random.default_rng(seed)
    S, A = model.n_states, model.n_actions
    theta = rng.normal(scale=1.0, size=(S, A))
    constrained = algorithm != "pg"
    lam = 1.0 if constrained else 0.0
    T = model.horizon
    rec = {"length": np.full(episodes, T, dtype=np.int64), "return": np.empty(episodes),
           "cost": np.empty((episodes, 1)), "lam": np.empty(episodes)}
    for e in range(episodes):
        g = policy_gradient(model, theta, lam=[lam] if constrained else None)
        theta = theta + 2.0 * g / (np.abs(g).max() + 1e-300)
        ev = evaluate(model, _softmax(theta))
        value = float(model.p0 @ ev.v)
        cost = float(model.p0 @ ev.c[:, 0])
        if constrained:
            lam = float(np.clip(lam + 0.5 * (cost - model.d[0]), 0.0, 500.0))
        rec["return"][e], rec["cost"][e, 0], rec["lam"][e] = value, cost, lam
    mark = os.environ.get("RCMDP_STANDIN_MARK")
    if mark:
        with open(os.path.join(mark, str(os.getpid())), "w") as fh:
            fh.write(f"{algorithm} {seed}\n")
    time.sleep(float(os.environ.get("RCMDP_STANDIN_SLEEP", "0")))
    return StandinResult(_softmax(theta), rec)


def crashing_train(model, algorithm, *, flag, **kw):
    """The stand-in, except that the process running a CPG job dies (SIGKILL) once: while
    the file ``flag`` does not exist yet (it is created first)."""
    import signal

    if algorithm == "cpg" and not os.path.exists(flag):
        with open(flag, "w") as fh:
            fh.write("crashed\n")
        os.kill(os.getpid(), signal.SIGKILL)
    return standin_train(model, algorithm, **kw)
