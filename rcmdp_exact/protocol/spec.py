r"""Frozen specifications of the reproduction's jobs, their keys and their seeds.

A job is a pure function of its specification.  Two kinds exist:

* :class:`RunSpec`: one training run of the paper's protocol (domain, algorithm, seed
  index, settings, options): estimation, training, testing (:mod:`.run`);
* :class:`GroundTruthSpec`: one exact reference computation (:mod:`.groundtruth`).

Every specification has a canonical JSON form (keys sorted, no spaces, floats by
``repr``), a key (the SHA-256 of that JSON, 64 hexadecimal digits) under which the store
keeps its result, and seeds drawn from ``numpy.random.SeedSequence`` of the key as an
integer.  Seeds therefore depend on what is computed, never on the order or the place
of execution.  Each phase takes its seed from the part of the specification it depends
on:

* estimation (phase 1): the :func:`estimation_fields` of the run (domain, seed index,
  episode source, delta and the domain variants), so the six algorithms of one seed
  index train on the same estimated model and the bracket of that model is computed once;
* training (phase 2) and the sampled test episodes (phase 3, optional): the whole run
  specification.

**Your own model** (``rcmdp reproduce --model PATH.npz``): the domain is ``"model"``
and the spec names the model by its content hash (``model``), with the horizon given on
the command line (``horizon``, 0 for the model's own), the perturbations it is tested on
(``perturbations``: name, group and content hash of each), the estimation episodes
(``estimation_episodes``: the paper's phase 1, asked for with ``--estimate``), the
content hash of a saved set used in place of the estimation (``set_file``), or, by
default, the ``radius`` and ``support`` of the set built around the model itself (the
model is judged on itself: no estimation, the learners train on the model);
``sources`` (not part of the key) tells a worker process where the files are.  The
kind of set (``set_kind``: a kind's name, or ``MODULE:CLASS`` of a set class of yours;
:func:`rcmdp_exact.uncertainty.set_class`) and the weight of the
overshoot in the penalised return (``penalty``, default 500, the paper's; ``rcmdp
reproduce --penalty W``) work for every domain.  These fields enter the canonical JSON
**only when they differ from their defaults**, so the specifications of the paper's
protocol, their keys and their seeds are those they always were; the estimation seed
does not depend on the kind of set, so every kind is estimated from the same episodes.

The settings of tests 1B and 2B are drawn with ``test_seed`` (0 by default), the same
for every run, so that every run is tested on the same settings.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields

from .._checks import check_choice, check_int, check_limit, check_real, check_type
from ..names import (
    DOMAIN_OF_TEST,
    ROBUST_ALGORITHMS,
    RUN_OPTIONS,
    TABLE1_ALGORITHMS,
    TESTS,
    USER_DOMAIN,
    USER_TEST,
)

ALGORITHMS = TABLE1_ALGORITHMS
OPTIONS = RUN_OPTIONS

__all__ = [
    "ALGORITHMS",
    "DOMAIN_OF_TEST",
    "OPTIONS",
    "ROBUST_ALGORITHMS",
    "TESTS",
    "TEST_DOMAIN",
    "GroundTruthSpec",
    "RunSpec",
    "canonical_json",
    "estimation_fields",
    "estimation_seed",
    "frozen_items",
    "phase_seed",
    "spec_key",
]

DOMAINS = ("inventory", "nav1", "nav2", USER_DOMAIN)
#: Every test and its domain: the paper's and your model's.
TEST_DOMAIN = {**DOMAIN_OF_TEST, USER_TEST: USER_DOMAIN}
#: Fields of a :class:`RunSpec` that enter its canonical JSON only when they differ from
#: these defaults (module notes).
OPTIONAL_FIELDS = {"model": "", "horizon": 0, "perturbations": (), "set_kind": "l1",
                   "set_file": "", "estimation_episodes": 0, "radius": None, "support": "",
                   "penalty": 500.0}
#: Version of the computation behind a key: part of every spec's JSON, raised whenever a
#: job would compute something else from the same fields, so old results are not reused.
JOB_VERSION = 1
_GROUND_TRUTH_KINDS = ("suite", "bracket", "training")

#: What each choice means, for the report.
OPTION_NOTES = {
    "estimation": {"paper": "the paper's estimation episodes (100 / 100 / 10,000)",
                   "reference": "the published implementation's (10 / 20 / 10,000)"},
    "offset_on": {"failure": "1B: the drawn offset replaces a failed move (published "
                             "implementation)",
                  "success": "1B: the drawn offset replaces a successful move (paper's "
                             "text)"},
    "cost_layout": {"reference": "Safe Navigation 1: the 7 cost cells of the published "
                                 "implementation",
                    "paper": "Safe Navigation 1: the 6 cost cells of the paper's figure"},
    "revenue": {"economic": "Inventory: revenue 3.99 x units sold",
                "reference": "Inventory: revenue 3.99 x E[s'] (published implementation)"},
    "demand": {"reference": "Inventory: demand discretised by the Normal CDF (published "
                            "model)",
               "rounded": "Inventory: rounded Normal draws clipped at 0 (published "
                          "simulator)"},
    "train_on": {"nominal": "PG and CPG train on the estimated nominal model "
                            "(docs/protocol.md)",
                 "data": "PG and CPG train on the true data model P_data (paper's text)"},
    "critic": {"learned": "RCPG worst case from a learned critic (paper)",
               "exact": "RCPG worst case from the exact values of the current policy"},
    "gradient": {"sampled": "sampled policy gradients (paper)",
                 "exact": "exact gradients (noise-free limit)"},
    "inner": {"sort": "exact sort-based L1 inner problem", "lp": "L1 inner problem by LP"},
    "multiplier_update": {"adam-log": "Adam on log lambda (published implementation)",
                          "sgd": "plain SGD on lambda (paper's text)"},
}


def canonical_json(obj) -> str:
    """The canonical JSON text of a JSON-able object: sorted keys, no spaces."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def spec_key(fields_: dict) -> str:
    """SHA-256 (hex) of the canonical JSON of ``fields_``."""
    return hashlib.sha256(canonical_json(fields_).encode("utf-8")).hexdigest()


def frozen(value):
    """``value`` with every list turned into a tuple (for the frozen specs' fields)."""
    if isinstance(value, list | tuple):
        return tuple(frozen(v) for v in value)
    return value


def frozen_items(fields_: dict) -> tuple:
    """The sorted (name, value) pairs of a dict of fields, lists as tuples."""
    return tuple(sorted((k, frozen(v)) for k, v in fields_.items()))


def estimation_seed(fields_: dict) -> int:
    """The seed of the estimation phase: :func:`phase_seed` of the estimation fields
    without the kind of set (every kind is built from the same episodes)."""
    return phase_seed({k: v for k, v in fields_.items() if k != "set"}, "estimation")


def phase_seed(fields_: dict, phase: str) -> int:
    """A 63-bit seed for ``phase`` from ``SeedSequence`` of the hash of ``fields_``.

    ``SeedSequence(int(sha256, 16), spawn_key=(crc of phase,))`` turned into one
    integer, so each phase has its own independent stream.
    """
    import numpy as np

    entropy = int(spec_key(fields_), 16)
    tag = int.from_bytes(hashlib.sha256(phase.encode("utf-8")).digest()[:4], "little")
    ss = np.random.SeedSequence(entropy, spawn_key=(tag,))
    return int(ss.generate_state(1, np.uint64)[0] >> np.uint64(1))


def _check_options(obj) -> None:
    for name, choices in OPTIONS.items():
        if hasattr(obj, name):
            check_choice(getattr(obj, name), name, choices)


def _check_extra(extra) -> tuple:
    check_type(extra, "extra", tuple, "give a tuple of (name, value) pairs, e.g. "
               "(('entropy', 0.0),)")
    out = []
    for pair in extra:
        check_type(pair, "an entry of extra", tuple, "give (name, value) pairs")
        check_int(len(pair), "length of an entry of extra", 2, 2)
        check_type(pair[0], "an option name in extra", str, "give the keyword name")
        canonical_json(pair[1])  # JSON-able values only (the key is built from them)
        out.append((pair[0], pair[1]))
    return tuple(sorted(out))


@dataclass(frozen=True)
class RunSpec:
    """One training run: the three phases of the paper's protocol for one algorithm.

    Attributes
    ----------
    domain : {"inventory", "nav1", "nav2"}
    algorithm : str
        One of :data:`ALGORITHMS`.
    seed : int >= 0
        The seed index (the paper's run number); phase seeds derive from the spec.
    episodes : int >= 1
        Training episodes (5,000 in the paper).
    estimation, delta
        Estimation episodes source (:data:`rcmdp_exact.domains.ESTIMATION_EPISODES`)
        and the Hoeffding confidence (0.1).
    n_draws, test_seed, offset_on
        Tests 1B / 2B: draws per N (50), the seed of the draws, and 1B's reading.
    cost_layout, revenue, demand
        Domain variants (:data:`OPTIONS`).
    train_on : {"nominal", "data"}
        What PG and CPG train on.
    sampled_episodes : int >= 0
        Also test by this many sampled episodes per setting (the paper's 50); 0 = exact
        testing only.
    critic, gradient, inner, multiplier_update, eval_every
        Learner options (``rcmdp_exact.learners.train``).
    extra : tuple of (name, value)
        Further keyword arguments of the trainer (for example ``(("entropy", 0.0),)``).
    trainer : str
        Name of the training function (``"learners"``: ``rcmdp_exact.learners.train``);
        any other name labels an injected trainer so that its results get other keys.
    model, horizon, perturbations, set_kind, set_file, estimation_episodes, radius, support
        Your own model and the kind of set (module notes); in the JSON only when not
        at their defaults.
    penalty : float > 0
        Weight of the overshoot in the penalised return R_pen (500, the paper's); in
        the JSON only when not 500.
    sources : tuple of (kind, content hash, path)
        Where the files of ``model``, ``perturbations`` and ``set_file`` are (not part
        of the key: a worker loads them and checks their hash).
    """

    domain: str
    algorithm: str
    seed: int
    episodes: int = 5000
    estimation: str = "paper"
    delta: float = 0.1
    n_draws: int = 50
    test_seed: int = 0
    offset_on: str = "failure"
    cost_layout: str = "reference"
    revenue: str = "economic"
    demand: str = "reference"
    train_on: str = "nominal"
    sampled_episodes: int = 0
    critic: str = "learned"
    gradient: str = "sampled"
    inner: str = "sort"
    multiplier_update: str = "adam-log"
    eval_every: int = 100
    extra: tuple = field(default=())
    trainer: str = "learners"
    model: str = ""
    horizon: int = 0
    perturbations: tuple = field(default=())
    set_kind: str = "l1"
    set_file: str = ""
    estimation_episodes: int = 0
    radius: float | None = None
    support: str = ""
    penalty: float = 500.0
    sources: tuple = field(default=(), compare=False, repr=False)

    def __post_init__(self):
        check_choice(self.domain, "domain", DOMAINS)
        for name, value in check_run_numbers({n: getattr(self, n) for n in _NUMBERS}).items():
            object.__setattr__(self, name, value)
        _check_user_fields(self)
        check_choice(self.algorithm, "algorithm", ALGORITHMS)
        # the checked values are kept (plain ints: numpy's do not go into the key's JSON)
        object.__setattr__(self, "seed", check_int(self.seed, "seed", 0))
        object.__setattr__(self, "episodes", check_limit(self.episodes, "episodes", "episodes"))
        check_type(self.trainer, "trainer", str, "give a name")
        _check_options(self)
        object.__setattr__(self, "extra", _check_extra(self.extra))

    # ------------------------------------------------------------------ identity
    def fields(self) -> dict:
        """The specification as a JSON-able dict (``extra`` as a list of pairs; the
        fields of :data:`OPTIONAL_FIELDS` only when not at their defaults)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "sources"}
        for name, default in OPTIONAL_FIELDS.items():
            if out[name] == default:
                del out[name]
        out["extra"] = [list(p) for p in self.extra]
        if "perturbations" in out:
            out["perturbations"] = [list(p) for p in self.perturbations]
        out["kind"] = "run"
        out["version"] = JOB_VERSION
        return out

    @property
    def key(self) -> str:
        """The store key: SHA-256 of the canonical JSON."""
        return spec_key(self.fields())

    @property
    def robust(self) -> bool:
        return self.algorithm in ROBUST_ALGORITHMS

    def estimation_fields(self) -> dict:
        """The fields the estimation phase depends on (see the module notes)."""
        if self.domain == USER_DOMAIN:
            out = {"phase": "estimation", "domain": self.domain, "model": self.model}
            if self.horizon:
                out["horizon"] = int(self.horizon)
            if self.set_file:
                out["set_file"] = self.set_file
                return out
            if self.radius is not None:  # the set around the model: no estimation
                out.update(radius=float(self.radius), support=self.support)
            else:
                out.update(seed=int(self.seed), episodes=int(self.estimation_episodes),
                           delta=float(self.delta))
        else:
            out = estimation_fields(self.domain, self.seed, self.estimation, self.delta,
                                    self.cost_layout, self.revenue, self.demand)
        if self.set_kind != "l1":
            out["set"] = self.set_kind
        return out

    def settings_fields(self) -> dict:
        """The fields the test settings and their metric depend on (the penalty weight
        only when it is not the paper's 500)."""
        if self.domain == USER_DOMAIN:
            out = {"phase": "test", "domain": self.domain, "model": self.model}
            if self.horizon:
                out["horizon"] = int(self.horizon)
            if self.perturbations:
                out["perturbations"] = [list(p) for p in self.perturbations]
        else:
            out = settings_fields(self.domain, self.n_draws, self.test_seed, self.offset_on,
                                  self.cost_layout, self.revenue, self.demand)
        if self.penalty != OPTIONAL_FIELDS["penalty"]:
            out["penalty"] = self.penalty
        return out

    def seeds(self) -> dict:
        """The seeds of the phases: ``estimation``, ``training``, ``sampled_test``."""
        f = self.fields()
        return {"estimation": estimation_seed(self.estimation_fields()),
                "training": phase_seed(f, "training"),
                "sampled_test": phase_seed(f, "sampled_test")}

    @classmethod
    def from_fields(cls, data: dict) -> RunSpec:
        """Rebuild a spec from :meth:`fields` (the store keeps that JSON)."""
        names = {f.name for f in fields(cls)}  # "kind" and "version" are not fields
        kw = {k: v for k, v in data.items() if k in names}
        kw["extra"] = tuple(tuple(p) for p in kw.get("extra", ()))
        kw["perturbations"] = tuple(tuple(p) for p in kw.get("perturbations", ()))
        return cls(**kw)


#: The numeric fields of a :class:`RunSpec` and their checks, in one place: a RunSpec
#: and the ``options`` of a :class:`~.phases.ReproduceSpec` (refused when the spec is
#: built, before any job) both check through :func:`check_run_numbers`.
_NUMBERS = {
    "penalty": lambda v: check_real(v, "penalty", 0.0, low_open=True),
    "delta": lambda v: check_real(v, "delta", 0.0, 1.0, low_open=True, high_open=True),
    "n_draws": lambda v: check_limit(v, "n_draws", "draws"),
    "test_seed": lambda v: check_int(v, "test_seed", 0),
    "sampled_episodes": lambda v: check_limit(v, "sampled_episodes", "sampled_episodes", 0),
    "eval_every": lambda v: check_int(v, "eval_every", 1),
    "horizon": lambda v: check_int(v, "horizon", 0),
    "estimation_episodes": lambda v: check_int(v, "estimation_episodes", 0),
    "radius": lambda v: None if v is None else check_real(v, "radius", 0.0),
}


def check_run_numbers(values: dict) -> dict:
    """The numeric RunSpec fields among ``values`` (``{name: value}``), checked: an
    InputError naming the first bad one and its range; the others are left out."""
    return {name: _NUMBERS[name](v) for name, v in values.items() if name in _NUMBERS}


def _check_user_fields(spec) -> None:
    """The fields of your own model and of the kind of set (module notes)."""
    from ..uncertainty.kinds import check_kind_name

    check_kind_name(spec.set_kind, "set_kind")
    for name in ("model", "set_file"):
        check_type(getattr(spec, name), name, str, "give a content hash (hex) or \"\"")
    user = spec.domain == USER_DOMAIN
    if user != bool(spec.model):
        from .._checks import InputError

        raise InputError(f"domain {spec.domain!r} with model {spec.model!r}: a spec of your "
                         f"own model has domain {USER_DOMAIN!r} and the content hash of the "
                         f"model file in model; the paper's domains have model \"\"")
    if not user and (spec.horizon or spec.perturbations or spec.set_file
                     or spec.estimation_episodes or spec.radius is not None or spec.support):
        from .._checks import InputError

        raise InputError(f"horizon, perturbations, set_file, estimation_episodes, radius and "
                         f"support apply to your own model (domain {USER_DOMAIN!r}), not to "
                         f"{spec.domain!r}")
    if user:
        from .._checks import InputError
        from ..names import AROUND_SUPPORTS

        given = [n for n, on in (("set_file", bool(spec.set_file)),
                                 ("estimation_episodes", spec.estimation_episodes > 0),
                                 ("radius", spec.radius is not None)) if on]
        if len(given) != 1:
            raise InputError(f"a spec of your own model gives its set by exactly one of "
                             f"set_file (a saved set), estimation_episodes >= 1 (the episodes "
                             f"of the uniform random policy that estimate it) or radius (a "
                             f"set around the model itself, with support); got "
                             f"{', '.join(given) or 'none of them'}")
        if spec.radius is not None:
            check_choice(spec.support, "support", AROUND_SUPPORTS)
        elif spec.support:
            raise InputError("support applies to the set around the model (radius), not to "
                             "a saved or estimated set")
    perts = tuple(tuple(p) for p in spec.perturbations)
    for p in perts:
        if len(p) != 3 or not all(isinstance(x, str) for x in p):
            from .._checks import InputError

            raise InputError(f"perturbations must be (name, group, content hash) triples of "
                             f"strings, got {p!r}")
    object.__setattr__(spec, "perturbations", perts)
    object.__setattr__(spec, "sources", tuple(tuple(s) for s in spec.sources))


def estimation_fields(domain, seed, estimation, delta, cost_layout, revenue, demand) -> dict:
    """The fields of the estimation phase: equal for the six algorithms of one seed."""
    out = {"phase": "estimation", "domain": domain, "seed": int(seed),
           "estimation": estimation, "delta": float(delta)}
    if domain == "nav1":
        out["cost_layout"] = cost_layout
    if domain == "inventory":
        out["revenue"], out["demand"] = revenue, demand
    return out


def settings_fields(domain, n_draws, test_seed, offset_on, cost_layout, revenue, demand) -> dict:
    """The fields the test settings of a domain depend on."""
    out = {"phase": "test", "domain": domain}
    if domain == "nav1":
        out.update(n_draws=int(n_draws), test_seed=int(test_seed), offset_on=offset_on,
                   cost_layout=cost_layout)
    elif domain == "nav2":
        out.update(n_draws=int(n_draws), test_seed=int(test_seed))
    else:
        out.update(revenue=revenue, demand=demand)
    return out


@dataclass(frozen=True)
class GroundTruthSpec:
    """One exact reference computation (:mod:`rcmdp_exact.protocol.groundtruth`).

    Attributes
    ----------
    kind : {"suite", "bracket", "training"}
        ``suite``: the exact optimum of each setting of the test ``suite`` and the
        exact bound of its pooled metric; ``bracket``: estimation at seed index
        ``seed``, the certified RCMDP bracket of the estimated ball and the test metrics
        of its lower policy; ``training``: the optima of the true training model (for
        the training curves).
    domain : str
    suite : str
        The test (``suite``), else "".
    seed : int
        ``bracket`` only: the seed index of the estimation.
    test, estimation : dict
        :func:`settings_fields` / :func:`estimation_fields` (canonical, JSON-able).
    bracket : tuple of (name, value)
        Keyword arguments of :func:`rcmdp_exact.rcmdp_bracket`.
    """

    kind: str
    domain: str
    suite: str = ""
    seed: int = 0
    test: tuple = ()
    estimation: tuple = ()
    bracket: tuple = ()
    sources: tuple = field(default=(), compare=False, repr=False)

    def __post_init__(self):
        check_choice(self.kind, "ground-truth kind", _GROUND_TRUTH_KINDS)
        object.__setattr__(self, "seed", check_int(  # a plain int, for the key's JSON
            self.seed, "seed", 0, hint=" (the seed index of the estimation)"))
        check_choice(self.domain, "domain", DOMAINS)

    def fields(self) -> dict:
        out = asdict(self)
        del out["sources"]
        for name in ("test", "estimation", "bracket"):
            out[name] = dict(getattr(self, name))
        out["kind_of_job"] = "ground_truth"
        out["version"] = JOB_VERSION
        return out

    @property
    def key(self) -> str:
        return spec_key(self.fields())

