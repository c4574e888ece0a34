"""The six algorithms as data, and the validated settings of a training run.

An algorithm is its *dynamics source* (where next states come from) plus its *update
rule* (whether the multiplier is learned, which quantity the worst case robustifies):

================== =========== ============= ==================
name               dynamics    robustifies   multiplier learned
================== =========== ============= ==================
``pg``             nominal     -             no (lambda = 0)
``cpg``            nominal     -             yes
``rcpg-value``     worst-case  value         yes
``rcpg-constraint`` worst-case constraint    yes
``rcpg-lagrangian`` worst-case lagrangian    yes
``adversarial-rcpg`` adversary lagrangian    yes
================== =========== ============= ==================

``docs/learners.md`` describes every setting of :class:`Settings` and where it comes
from (the paper, its published implementation, or this toolkit).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

from .._checks import InputError, check_choice, check_int, check_real, check_type

__all__ = ["ALGORITHMS", "Algorithm", "Settings", "default_lambda"]


@dataclass(frozen=True)
class Algorithm:
    """One learner: its dynamics source and its update rule."""

    name: str
    dynamics: str
    """"nominal" (the model's kernel), "worst-case" (the L1 ball's worst case, recomputed
    every episode) or "adversary" (a learned adversary inside the ball)."""
    objective: str | None
    """What the worst case minimises: "value", "constraint" or "lagrangian"."""
    learn_multiplier: bool
    description: str

    @property
    def robust(self) -> bool:
        """True when the algorithm needs an uncertainty set (``ball``)."""
        return self.dynamics != "nominal"


#: The registry of learners, by name.
ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm("pg", "nominal", None, False,
                  "REINFORCE on the nominal model, no constraint (lambda = 0)"),
        Algorithm("cpg", "nominal", None, True,
                  "Lagrangian policy gradient on the nominal model"),
        Algorithm("rcpg-value", "worst-case", "value", True,
                  "RCPG (robust value): worst case of the value over the L1 ball"),
        Algorithm("rcpg-constraint", "worst-case", "constraint", True,
                  "RCPG (robust constraint): worst case (largest) of the cost"),
        Algorithm("rcpg-lagrangian", "worst-case", "lagrangian", True,
                  "RCPG (robust Lagrangian): worst case of V - lambda.C"),
        Algorithm("adversarial-rcpg", "adversary", "lagrangian", True,
                  "Adversarial RCPG: an MLP adversary minimises the Lagrangian in the ball"),
    )
}

CRITICS = ("learned", "exact")
GRADIENTS = ("sampled", "exact")
INNERS = ("sort", "lp")
MULTIPLIER_UPDATES = ("adam-log", "sgd")
SCHEDULES = ("gradient", "step", "none")
ENTROPY_FORMS = ("weight", "gradient")
ADVERSARY_SIGNALS = ("printed", "corrected")
MULTIPLIER_SIGNALS = ("cost-to-go", "episode")
BACKENDS = ("numba", "numpy")


def default_lambda(model) -> float:
    """The paper's initial multiplier: 50 for Inventory Management, 1 otherwise."""
    name = getattr(model, "name", None) or ""
    return 50.0 if name.startswith("inventory") else 1.0


@dataclass(frozen=True)
class Settings:
    """Every choice of a training run (validated by :meth:`checked`).

    ``None`` in a learning rate means "the default of the gradient mode" (see
    ``docs/learners.md``); :meth:`checked` resolves it.
    """

    algorithm: str
    seed: int | None = 0
    episodes: int | None = 5000
    steps: int | None = None
    critic: str = "learned"
    gradient: str = "sampled"
    inner: str = "sort"
    multiplier_update: str = "adam-log"
    eval_every: int | None = 100
    entropy: float = 5.0
    entropy_form: str = "weight"
    lambda_init: float | None = None
    lambda_adv_init: float | None = None
    lambda_max: float = 500.0
    lr_policy: float | None = None
    lr_multiplier: float | None = None
    lr_adversary: float | None = None
    lr_adversary_multiplier: float | None = None
    lr_critic: float = 1e-3
    schedule: str | None = None
    schedule_every: int = 500
    adversary_start: int = 50
    adversary_batch: int = 100
    adversary_signal: str = "printed"
    discount_weight: bool = False
    multiplier_signal: str = "cost-to-go"
    adversary_multiplier_signal: str = "visited"
    prefit_steps: int = 3000
    prefit_lr: float = 0.01
    hidden: int = 100
    feature_scale: float | None = None
    backend: str = "numba"

    def checked(self, model) -> Settings:
        """A copy with every value validated and the defaults resolved."""
        check_choice(self.algorithm, "algorithm", tuple(ALGORITHMS))
        check_choice(self.critic, "critic", CRITICS)
        check_choice(self.gradient, "gradient", GRADIENTS)
        check_choice(self.inner, "inner", INNERS)
        check_choice(self.multiplier_update, "multiplier_update", MULTIPLIER_UPDATES)
        if self.schedule is not None:
            check_choice(self.schedule, "schedule", SCHEDULES)
        check_choice(self.entropy_form, "entropy_form", ENTROPY_FORMS)
        check_choice(self.adversary_signal, "adversary_signal", ADVERSARY_SIGNALS)
        check_choice(self.backend, "backend", BACKENDS)
        check_choice(self.multiplier_signal, "multiplier_signal", MULTIPLIER_SIGNALS)
        check_choice(self.adversary_multiplier_signal, "adversary_multiplier_signal",
                     ("visited", "batch"))
        check_type(self.discount_weight, "discount_weight", bool, "pass True or False")
        for name in ("episodes", "steps"):
            value = getattr(self, name)
            if value is not None:
                check_int(value, name, 1)
        if self.episodes is None and self.steps is None:
            check_int(None, "episodes", 1, hint="; give episodes, steps or both")
        if self.eval_every is not None:
            check_int(self.eval_every, "eval_every", 1, hint="; or None (final only)")
        for name in ("schedule_every", "adversary_batch", "hidden"):
            check_int(getattr(self, name), name, 1)
        for name in ("adversary_start", "prefit_steps"):
            check_int(getattr(self, name), name, 0)
        check_real(self.entropy, "entropy", 0.0)
        if self.feature_scale is not None:
            check_real(self.feature_scale, "feature_scale", 0.0, low_open=True)
        check_real(self.lambda_max, "lambda_max", 0.0, low_open=True)
        exact = self.gradient == "exact"
        lam0 = default_lambda(model)
        defaults = {
            "lr_policy": 1e-3,
            "lr_multiplier": 3e-3 if exact else 1e-4,
            "lr_adversary": 1e-3,
            "lr_adversary_multiplier": 3e-3 if exact else 1e-4,
            "lambda_init": lam0,
            "lambda_adv_init": lam0,
        }
        if exact and self.feature_scale is None:
            defaults["feature_scale"] = 1.0
        values = {}
        for name, default in defaults.items():
            value = getattr(self, name)
            values[name] = default if value is None else value
        for name in ("lr_policy", "lr_multiplier", "lr_adversary", "lr_adversary_multiplier",
                     "lr_critic", "prefit_lr"):
            value = values.get(name, getattr(self, name))
            values[name] = check_real(value, name, 0.0, low_open=True)
        if "feature_scale" in defaults:
            values["feature_scale"] = defaults["feature_scale"]
        if self.schedule is None:
            values["schedule"] = "none" if exact else "gradient"
        for name in ("lambda_init", "lambda_adv_init"):
            values[name] = check_real(values[name], name, 0.0, self.lambda_max)
        if exact and self.steps is not None:
            raise InputError(f"steps={self.steps} cannot be used with gradient='exact': each "
                             f"episode is one exact gradient step; give episodes instead")
        return Settings(**{**asdict(self), **values})

    @property
    def algo(self) -> Algorithm:
        return ALGORITHMS[self.algorithm]

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Settings:
        data = json.loads(text)
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})
