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

from dataclasses import asdict, dataclass, fields

from .._checks import (
    InputError,
    check_choice,
    check_int,
    check_limit,
    check_real,
    check_seed,
    check_type,
)
from ..names import (  # the learners' option names, re-exported here
    ADVERSARY_BASELINES,
    ADVERSARY_FORMS,
    ADVERSARY_MARGIN,
    ADVERSARY_MULTIPLIER_SIGNALS,
    ADVERSARY_SIGNALS,
    BACKENDS,
    CRITICS,
    ENTROPY_FORMS,
    GRADIENTS,
    INNERS,
    MULTIPLIER_SIGNALS,
    MULTIPLIER_UPDATES,
    SAMPLED_MULTIPLIER_UPDATES,
    SCHEDULES,
)

__all__ = ["ALGORITHMS", "EXACT_DEFAULTS", "Algorithm", "Settings",]


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
        """True when the algorithm needs an uncertainty set (``uset``)."""
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



#: Defaults of the exact-gradient mode (``gradient="exact"``), chosen on Inventory
#: Management where the budget binds; ``docs/learners.md`` says why and what they give.
EXACT_DEFAULTS = {
    "lr_policy": 1e-3,
    "lr_multiplier": 3e-4,
    "lr_adversary": 1e-3,
    "lr_adversary_multiplier": 3e-3,
    "lam_init": 0.04,
    "feature_scale": 1.0,
    "feature_centre": True,
    "multiplier_update": "augmented",
    "schedule": "none",
    "multiplier_start": 1500,
}


def _default_lam_init(model) -> float:
    """The paper's initial multiplier: 50 for Inventory Management, 1 otherwise."""
    name = getattr(model, "name", None) or ""
    return 50.0 if name.startswith("inventory") else 1.0


@dataclass(frozen=True)
class Settings:
    """Every choice of a training run (validated by :meth:`checked`), passed whole from
    :func:`~rcmdp_exact.learners.train` to the loop.

    ``train(model, algorithm, **options)`` takes every field but ``algorithm`` and
    ``seed`` by name.  ``None`` means "the default of the gradient mode" (see
    ``docs/learners.md``, which gives each field's source: the paper, its published
    implementation, or this toolkit); :meth:`checked` resolves it.
    """

    algorithm: str
    """One of :data:`ALGORITHMS`."""
    seed: int | None = 0
    """The run's seed (None when it was given as a Generator or SeedSequence)."""
    episodes: int | None = 5000
    """Stop after this many episodes (paper: 5000); None: only ``steps``."""
    steps: int | None = None
    """Stop after this many environment steps (the last episode is cut there)."""
    critic: str = "learned"
    """RCPG's worst case from the learned critic, or "exact": from the exact robust fixed
    point of the current policy."""
    gradient: str = "sampled"
    """Sampled episodes, or "exact": one exact gradient step per episode."""
    inner: str = "sort"
    """The set's exact solver, or "lp": its convex program through cvxpy (per episode)."""
    multiplier_update: str | None = None
    """"adam-log" (reference), "sgd" (paper) or "augmented" (exact mode); None: the mode's
    default."""
    eval_every: int | None = 100
    """Exact evaluation every so many episodes and at the end; None: at the end only."""
    entropy: float = 5.0
    """Entropy regularisation of the policy (paper)."""
    entropy_form: str = "weight"
    """Entropy added to the score's weight (reference) or "gradient": its gradient."""
    lam_init: float | None = None
    """Initial multiplier; None: 50 for Inventory, 1 otherwise (exact mode 0.04)."""
    lam_adv_init: float | None = None
    """Initial adversary multiplier; None: as ``lam_init``'s sampled default."""
    lam_max: float = 500.0
    """Multipliers stay in [0, lam_max]."""
    lr_policy: float | None = None
    """Adam step size of the policy; None: 1e-3."""
    lr_multiplier: float | None = None
    """Multiplier step size; None: 1e-4 (exact mode 3e-4)."""
    lr_adversary: float | None = None
    """Adam step size of the adversary; None: 1e-3."""
    lr_adversary_multiplier: float | None = None
    """Step size of the adversary's multiplier; None: 1e-4 (exact mode 3e-3)."""
    lr_critic: float = 1e-3
    """Adam step size of the critic."""
    schedule: str | None = None
    """1/(1 + n // schedule_every) on the "gradient", the "step", or "none"; None: the
    mode's default ("gradient" sampled, "none" exact)."""
    schedule_every: int = 500
    """Episodes per step of the schedule."""
    adversary_start: int = 50
    """Adversary updates start after this many episodes (0: at once, the paper)."""
    adversary_batch: int = 100
    """N_samp of the paper's Algorithm 2."""
    adversary_signal: str = "printed"
    """The adversary's signal as printed, or "corrected"."""
    discount_weight: bool = False
    """Multiply each step's weight by gamma^t."""
    multiplier_signal: str = "cost-to-go"
    """The multiplier ascends C_t - d at every step, or "episode": C_0 - d."""
    adversary_multiplier_signal: str = "batch-hinge"
    r""":math:`\lambda_{adv}` (``lam_adv``) from the batch's mean hinge, "batch" (mean
    signed excess) or "visited" (the paper's rule)."""
    adversary_baseline: str = "none"
    """Or "critic": the adversary's signal minus its expectation under a learned critic."""
    adversary_margin: float | None = None
    """The deviation penalty acts beyond (1 - margin) alpha; None: 0.2 with
    "batch-hinge", else 0."""
    adversary_form: str = "softmax"
    """Or "mixture": (1 - e) P_hat + e softmax with e = min(1, alpha / 2)."""
    prefit_steps: int = 3000
    """Adam steps of the adversary's pre-fit to the nominal."""
    prefit_lr: float = 0.01
    """Step size of the pre-fit."""
    hidden: int = 100
    """Hidden ReLU units of the policy, the adversary and the critic."""
    feature_scale: float | None = None
    """Inputs are the state features times this; None: 1/S (exact mode 1.0)."""
    feature_centre: bool | None = None
    """Subtract the features' mean over the states; None: False (exact mode True)."""
    multiplier_start: int | None = None
    """The multipliers stay at lam_init for this many episodes; None: 0 (exact 1500)."""
    penalty: float = 0.02
    """rho of ``multiplier_update="augmented"``."""
    backend: str = "numba"
    """The compiled loop, or "numpy": its reference (slow; for tests)."""

    def checked(self, model) -> Settings:
        """A copy with every value validated and the defaults resolved."""
        check_choice(self.algorithm, "algorithm", tuple(ALGORITHMS))
        check_choice(self.critic, "critic", CRITICS)
        check_choice(self.gradient, "gradient", GRADIENTS)
        exact = self.gradient == "exact"
        check_choice(self.inner, "inner", INNERS)
        if self.multiplier_update is not None:
            check_choice(self.multiplier_update, "multiplier_update",
                         MULTIPLIER_UPDATES if exact else SAMPLED_MULTIPLIER_UPDATES,
                         hint="" if exact else " ('augmented' needs gradient='exact')")
        if self.schedule is not None:
            check_choice(self.schedule, "schedule", SCHEDULES)
        check_choice(self.entropy_form, "entropy_form", ENTROPY_FORMS)
        check_choice(self.adversary_signal, "adversary_signal", ADVERSARY_SIGNALS)
        check_choice(self.backend, "backend", BACKENDS)
        check_choice(self.multiplier_signal, "multiplier_signal", MULTIPLIER_SIGNALS)
        check_choice(self.adversary_multiplier_signal, "adversary_multiplier_signal",
                     ADVERSARY_MULTIPLIER_SIGNALS)
        check_choice(self.adversary_baseline, "adversary_baseline", ADVERSARY_BASELINES)
        check_choice(self.adversary_form, "adversary_form", ADVERSARY_FORMS)
        if self.adversary_margin is not None:
            check_real(self.adversary_margin, "adversary_margin", 0.0, 1.0, high_open=True)
        check_type(self.discount_weight, "discount_weight", bool, "pass True or False")
        if self.feature_centre is not None:
            check_type(self.feature_centre, "feature_centre", bool, "pass True, False or None")
        for name in ("episodes", "steps"):
            value = getattr(self, name)
            if value is not None:
                check_limit(value, name, name)
        if self.episodes is None and self.steps is None:
            check_int(None, "episodes", 1, hint="; give episodes, steps or both")
        if self.eval_every is not None:
            check_int(self.eval_every, "eval_every", 1, hint="; or None (final only)")
        check_int(self.schedule_every, "schedule_every", 1)
        # an adversary's batch of episodes is sampled at once; its prefit steps are work
        check_limit(self.adversary_batch, "adversary_batch", "episodes")
        check_limit(self.hidden, "hidden", "hidden")
        check_int(self.adversary_start, "adversary_start", 0)
        check_limit(self.prefit_steps, "prefit_steps", "steps", 0)
        check_seed(self.seed)
        if self.multiplier_start is not None:
            check_int(self.multiplier_start, "multiplier_start", 0)
        check_real(self.entropy, "entropy", 0.0)
        check_real(self.penalty, "penalty", 0.0, low_open=True)
        if self.feature_scale is not None:
            check_real(self.feature_scale, "feature_scale", 0.0, low_open=True)
        check_real(self.lam_max, "lam_max", 0.0, low_open=True)
        lam0 = _default_lam_init(model)
        # None means "the default of the gradient mode" (docs/learners.md)
        defaults = EXACT_DEFAULTS if exact else {
            "lr_policy": 1e-3, "lr_multiplier": 1e-4, "lr_adversary": 1e-3,
            "lr_adversary_multiplier": 1e-4, "lam_init": lam0, "feature_scale": None,
            "feature_centre": False, "multiplier_update": "adam-log", "schedule": "gradient",
            "multiplier_start": 0,
        }
        defaults = {"lam_adv_init": lam0, "adversary_margin": (
            ADVERSARY_MARGIN if self.adversary_multiplier_signal == "batch-hinge" else 0.0),
            **defaults}
        values = {}
        for name, default in defaults.items():
            value = getattr(self, name)
            values[name] = default if value is None else value
        for name in ("lr_policy", "lr_multiplier", "lr_adversary", "lr_adversary_multiplier",
                     "lr_critic", "prefit_lr"):
            value = values.get(name, getattr(self, name))
            values[name] = check_real(value, name, 0.0, low_open=True)
        for name in ("lam_init", "lam_adv_init"):
            values[name] = check_real(values[name], name, 0.0, self.lam_max)
        if exact and self.steps is not None:
            raise InputError(f"steps={self.steps} cannot be used with gradient='exact': each "
                             f"episode is one exact gradient step; give episodes instead")
        return Settings(**{**asdict(self), **values})

    @property
    def algo(self) -> Algorithm:
        return ALGORITHMS[self.algorithm]

    def to_json(self) -> str:
        """The settings as strict JSON (non-finite numbers tagged,
        :func:`rcmdp_exact._io.json_text`); :meth:`from_json` reads them back equal."""
        from .._io import json_text

        return json_text(asdict(self), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict) -> Settings:
        """Settings from a dict of fields (``dataclasses.asdict`` of a Settings); a name
        that is not a field is an :class:`~rcmdp_exact.InputError` naming it."""
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise InputError(f"{', '.join(map(repr, unknown))} "
                             f"{'are not fields' if len(unknown) > 1 else 'is not a field'} "
                             f"of rcmdp_exact.learners.Settings; its fields: "
                             f"{', '.join(names)}")
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> Settings:
        """The settings of JSON text written by :meth:`to_json`."""
        from .._io import json_value

        return cls.from_dict(json_value(text))
