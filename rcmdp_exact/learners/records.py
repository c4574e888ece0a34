"""The result of a training run, its records, exact periodic evaluation, save and load.

Per-episode records (arrays with one row per episode):

=============== ====== ==========================================================
name            shape  meaning
=============== ====== ==========================================================
``episode``     (E,)   episode number, 1-based
``length``      (E,)   environment steps of the episode
``steps``       (E,)   environment steps so far (cumulative)
``return``      (E,)   undiscounted sum of the episode's rewards
``cost``        (E, K) undiscounted sum of each cost
``lam``         (E, K) multipliers after the episode (0 for PG)
``lam_adv``     (E,)   the adversary's multiplier (NaN without adversary)
``adv_deviation`` (E,) mean L1 distance of the adversary's kernel to the nominal over
                       the non-terminal pairs (next-state form, the ball's norm)
``adv_inside``  (E,)   fraction of non-terminal pairs within their radius
=============== ====== ==========================================================

In exact-gradient mode an "episode" is one exact gradient step: ``length`` is 0 and
``return`` / ``cost`` hold the exact discounted value and costs from p0 under the
dynamics used for that step.

Exact evaluation every ``eval_every`` episodes and at the end (``eval_episode``):
``eval_{target}_{policy}_{metric}`` with target ``train`` (the training model),
``true`` (``true_model``), ``worst`` (the exact worst case on the ball, robust
algorithms), ``learner`` (the learner's own worst case at that moment, robust
algorithms: the dynamics it trains against, for the adversary brought into the ball by
:meth:`~rcmdp_exact.L1Ball.pull_inside`) and ``adversary`` (Adversarial RCPG: the
adversary's kernel as it is); policy ``stochastic`` or ``greedy``; metric ``value`` (discounted,
from p0), ``cost`` (K,), ``test_value``, ``test_cost`` (K,) (T steps, undiscounted)
and ``penalised`` (the test metric's penalised return).
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from .._checks import check_out_path
from .._result import Result
from ..core.evaluation import evaluate, evaluate_finite_horizon, penalised_return, rescaled_budget
from ..core.mdp import greedy_policy
from ..core.nn import MLP, softmax
from .base import Settings

__all__ = ["EPISODE_RECORDS", "OPTIONAL_FIELDS", "TrainResult",
           "evaluate_policy", "load"]

#: Names of the per-episode records.
EPISODE_RECORDS = ("episode", "length", "steps", "return", "cost", "lam", "lam_adv",
                   "adv_deviation", "adv_inside")
TARGETS = ("train", "true", "worst", "learner", "adversary")
POLICIES = ("stochastic", "greedy")
METRICS = ("value", "cost", "test_value", "test_cost", "penalised_return")
def _metrics(model, pi) -> dict:
    ev = evaluate(model, pi)
    fh = evaluate_finite_horizon(model, pi)
    return {"value": ev.value, "cost": np.asarray(ev.costs), "test_value": fh.value,
            "test_cost": np.asarray(fh.costs), "penalised_return": fh.penalised_return}


def _worst_metrics(model, pi, uset, inner: str) -> dict:
    from ..robust import robust_evaluate

    res = robust_evaluate(model, pi, uset, "value", per_constraint=True, inner=inner,
                          progress=False)
    T = model.horizon
    value_fh = evaluate_finite_horizon(model.with_transitions(res.P_worst, check=False),
                                       pi).value
    cost_fh = np.array([
        evaluate_finite_horizon(model.with_transitions(res.P_worst_cost[k], check=False),
                                pi).costs[k]
        for k in range(model.n_constraints)
    ])
    budget = rescaled_budget(model.d, model.gamma, T)
    return {"value": res.value, "cost": np.asarray(res.costs_worst), "test_value": value_fh,
            "test_cost": cost_fh,
            "penalised_return": penalised_return(value_fh, cost_fh, budget)}


def evaluate_policy(model, table, *, true_model=None, uset=None, learner_kernel=None,
                    adversary_kernel=None, inner: str = "sort") -> dict:
    """Exact metrics of a policy table (stochastic and greedy) on every target.

    Returns a dict ``{(target, policy): {metric: value}}`` (see the module notes).
    """
    out = {}
    for pol_name, pi in (("stochastic", table), ("greedy", greedy_policy(table))):
        out[("train", pol_name)] = _metrics(model, pi)
        if true_model is not None:
            out[("true", pol_name)] = _metrics(true_model, pi)
        if uset is not None:
            out[("worst", pol_name)] = _worst_metrics(model, pi, uset, inner)
        if learner_kernel is not None:
            out[("learner", pol_name)] = _metrics(
                model.with_transitions(learner_kernel, check=False), pi)
        if adversary_kernel is not None:
            out[("adversary", pol_name)] = _metrics(
                model.with_transitions(adversary_kernel, check=False), pi)
    return out


def eval_records(evals: list, episodes: list, K: int) -> dict:
    """Stack the evaluations into ``eval_*`` arrays."""
    recs = {"eval_episode": np.asarray(episodes, dtype=np.int64)}
    if not evals:
        return recs
    for key in evals[0]:
        target, pol = key
        for metric in METRICS:
            vals = [e[key][metric] for e in evals]
            arr = np.asarray(vals, dtype=np.float64)
            if metric in ("cost", "test_cost"):
                arr = arr.reshape(len(vals), K)
            recs[f"eval_{target}_{pol}_{metric}"] = arr
    return recs


def _no_adversary_inputs():
    return np.zeros((0, 0))


#: The fields of a :class:`TrainResult` that a trainer may leave out, and their defaults.
OPTIONAL_FIELDS = {
    "adversary_params": lambda: np.zeros(0),
    "adversary_inputs": _no_adversary_inputs,
    "adversary_outcomes": lambda: np.zeros((0, 0), np.int64),
    "critic_params": lambda: np.zeros(0),
    "adversary_mix": lambda: np.zeros(0),
    "adversary_nominal": _no_adversary_inputs,
    "timings": dict,
    "info": dict,
    "model_name": str,
}
#: The fields every :class:`TrainResult` has.
_REQUIRED_FIELDS = ("algorithm", "settings", "inputs", "hidden", "n_actions", "policy_params",
                   "lam", "lam_adv", "records")


class TrainResult(Result, name="rcmdp_exact.learners.TrainResult", kind="training result"):
    """A trained policy, its records and everything needed to rebuild it: a
    :class:`~rcmdp_exact.Result` (fields are keys and attributes; ``to_json`` /
    ``from_json``, ``save`` / ``load`` give it back as a TrainResult).

    Fields: ``algorithm``; ``settings`` (the run's validated
    :class:`~rcmdp_exact.learners.Settings`: ``train(..., settings=res.settings)``
    repeats the run); ``inputs`` (S, F), ``hidden``, ``n_actions`` and
    ``policy_params``, the MLP policy; ``lam`` the final multipliers and ``lam_adv`` the
    adversary's (NaN without one); ``records`` the arrays of ``docs/learners.md`` (per
    episode and per exact evaluation, a dict of arrays); ``adversary_params``,
    ``adversary_inputs``, ``adversary_outcomes`` the adversary (empty without one), with
    ``adversary_mix`` (S*A,) and ``adversary_nominal`` (S*A, O) for
    ``adversary_form="mixture"``; ``critic_params`` (empty without a critic);
    ``timings`` seconds spent per phase (``setup`` including compilation, ``prefit``,
    ``loop``, ``evaluation``, ``total``); ``info`` facts of the run (pre-fit quality,
    steps, episodes); ``model_name``.

    ``policy`` (the same as ``policy_table()``, which stays) gives the (S, A) action
    probabilities.
    """

    def __init__(self, *args, **fields):
        super().__init__(*args, **fields)
        missing = [name for name in _REQUIRED_FIELDS if name not in self]
        if missing:
            raise TypeError(f"TrainResult needs the field{'s' if len(missing) > 1 else ''} "
                            f"{', '.join(missing)}")
        if not isinstance(self["settings"], Settings):
            raise TypeError(f"TrainResult.settings must be a rcmdp_exact.learners.Settings, "
                            f"not {type(self['settings']).__name__}")
        for name, default in OPTIONAL_FIELDS.items():
            if name not in self:
                dict.__setitem__(self, name, default())
        dict.__setitem__(self, "records", dict(self["records"]))

    def _fields_out(self) -> dict:
        return {**self, "settings": asdict(self.settings)}

    @classmethod
    def _from_fields(cls, fields: dict) -> TrainResult:
        return cls({**fields, "settings": Settings.from_dict(fields["settings"])})

    @property
    def policy(self) -> np.ndarray:
        """Action probabilities (S, A) of the trained policy (:meth:`policy_table`)."""
        return self.policy_table()

    def policy_table(self) -> np.ndarray:
        """Action probabilities (S, A) of the trained policy (numpy forward pass)."""
        net = MLP(self.inputs.shape[1], self.n_actions, hidden=self.hidden, seed=0)
        return softmax(net.logits(self.inputs, self.policy_params))

    def greedy_policy(self) -> np.ndarray:
        """The one-hot greedy (argmax) policy (S, A) of :meth:`policy_table`."""
        return greedy_policy(self.policy_table())

    def adversary_table(self) -> np.ndarray | None:
        """The adversary's outcome probabilities (S*A, O), or None."""
        if self.adversary_params.size == 0:
            return None
        O = self.adversary_outcomes.shape[1]
        net = MLP(self.adversary_inputs.shape[1], O, hidden=self.hidden, seed=0)
        q = softmax(net.logits(self.adversary_inputs, self.adversary_params))
        if self.adversary_mix.size:
            e = self.adversary_mix[:, None]
            q = (1.0 - e) * self.adversary_nominal + e * q
        return q

    @property
    def episodes(self) -> int:
        return int(self.records["length"].shape[0])

    @property
    def steps(self) -> int:
        st = self.records["steps"]
        return int(st[-1]) if st.size else 0

    def __repr__(self) -> str:
        return (f"TrainResult(algorithm={self.algorithm!r}, episodes={self.episodes}, "
                f"steps={self.steps}, lam={np.asarray(self.lam).tolist()}, "
                f"model={self.model_name!r})")

    # ------------------------------------------------------------------ persistence
    def save(self, path, force: bool = True):
        """Save to ``.npz`` (no pickle; :meth:`Result.save`'s archive); :func:`load` (or
        :meth:`Result.load`) gives an equal TrainResult back.

        The archive's ``meta_json`` and ``settings_json`` are strict JSON: a NaN (the
        adversary's multiplier ``lam_adv`` of a learner without adversary, a timing)
        is written as ``{"__type__": "float", "value": "nan"}`` (and inf as ``"inf"``),
        read back as the float by :func:`load` (:func:`rcmdp_exact._io.json_text`).

        The suffix ``.npz`` is added when ``path`` has another one (or none); an existing
        file is refused unless ``force``; the file is written atomically.  Returns the
        path written.
        """
        from .._io import npz_path

        return super().save(check_out_path(npz_path(path), kind="file", force=force,
                                           name="path"))


def load(path) -> TrainResult:
    """Load a :class:`TrainResult` saved by :meth:`TrainResult.save` (the same as
    :meth:`TrainResult.load`).

    ``path`` with or without the suffix ``.npz``.  A missing, foreign, truncated or
    invalid file is a :class:`~rcmdp_exact.LoadError` naming the path.
    """
    return TrainResult.load(path)
