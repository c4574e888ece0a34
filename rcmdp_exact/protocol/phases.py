"""The paper's protocol as a list of jobs, and the ``--quick`` preset.

:func:`plan` turns a choice of tests, algorithms, seeds and options into the run
specifications (one per domain x algorithm x seed; a run is tested on every test of its
domain) and the ground-truth jobs of the selected tests:

* ``suite`` (per test): the exact optimum of every test setting (its T-step CMDP
  optimum) and the exact bound of the pooled test metric
  (:func:`~.groundtruth.setting_optima`, :func:`~.groundtruth.pooled_bound`);
* ``bracket`` (per domain and estimation seed): the certified RCMDP bracket of the
  estimated ball (:func:`rcmdp_exact.rcmdp_bracket`) and the test metrics of its lower
  policy;
* ``training`` (per domain): the optima of the true training model.

:class:`ReproduceSpec` (with :class:`YourModel`) is the frozen, checked choice that
:func:`rcmdp_exact.protocol.reproduce` and ``rcmdp reproduce`` plan from
(:meth:`ReproduceSpec.jobs`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from .._checks import InputError, check_choice, check_limit, check_real, check_type
from ..names import BRACKET_ASCENT, BRACKET_BOXES, BRACKET_SECONDS, USER_TEST
from .spec import (
    ALGORITHMS,
    OPTIONS,
    TEST_DOMAIN,
    TESTS,
    GroundTruthSpec,
    RunSpec,
    check_run_numbers,
    frozen_items,
    settings_fields,
)

__all__ = ["FULL", "QUICK", "ReproduceSpec", "YourModel", "plan"]

#: The full protocol: 20 seeds, 5,000 episodes, 50 draws per N.
FULL = {"seeds": 20, "episodes": 5000, "n_draws": 50, "eval_every": 100}
#: Options of :func:`rcmdp_exact.rcmdp_bracket` in the full protocol: the ground-truth
#: table's work budget (boxes and ascent steps decide the bracket, so the same spec gives
#: the same bracket on every run and load); the time limit is only a safety net (a
#: bracket it stops is recorded with ``reproducible`` false); the RCPG variants' targets
#: are not needed by the table.
_BRACKET_OPTIONS = (("variants", ()), ("max_boxes", BRACKET_BOXES),
                   ("n_ascent", BRACKET_ASCENT), ("time_limit", BRACKET_SECONDS))
#: ``--quick``: every algorithm and test, 2 seeds, 200 episodes (exact evaluation every
#: 50), 2 draws per N in tests 1B / 2B, a coarser bracket search (still certified,
#: possibly wider) and one bracket seed.
QUICK = {"seeds": 2, "episodes": 200, "n_draws": 2, "eval_every": 50, "bracket_seeds": 1,
         "bracket": (("n_cuts", 5), ("n_grid", 9), ("n_refine", 10), *_BRACKET_OPTIONS)}


def plan(tests=TESTS, algorithms=ALGORITHMS, seeds: int | None = None,
         episodes: int | None = None, *, quick: bool = False, ground_truth: bool = True,
         bracket_seeds: int | None = None, **options) -> list:
    """The jobs of a reproduction (run specs first, then ground truth).

    Parameters
    ----------
    tests : sequence of str
        Tests among "inventory", "1A", "1B", "2A", "2B", or ``["model"]`` (your own
        model: give ``model``, ``radius`` and ``support`` (or ``estimation_episodes``,
        or ``set_file``) and ``sources`` in ``options``, see :mod:`.spec` and
        :func:`.user.spec_options`).
    algorithms : sequence of str
        Among :data:`~.spec.ALGORITHMS`.
    seeds : int, optional
        Number of seed indices 0..seeds-1 (default 20; quick 2).
    episodes : int, optional
        Training episodes (default 5,000; quick 200).
    quick : bool
        Use :data:`QUICK` for what is not given.
    ground_truth : bool
        Add the ground-truth jobs.
    bracket_seeds : int, optional
        Estimation seeds that get a bracket (default: all seeds; quick 1).
    **options
        Fields of :class:`~.spec.RunSpec` (``n_draws``, ``offset_on``, ``estimation``,
        ``sampled_episodes``, ``trainer``, ...).
    """
    from .._checks import check_choice, check_limit

    preset = QUICK if quick else FULL
    seeds = check_limit(preset["seeds"] if seeds is None else seeds, "seeds", "seeds")
    episodes = check_limit(preset["episodes"] if episodes is None else episodes, "episodes",
                           "episodes")
    options.setdefault("n_draws", preset["n_draws"])
    options.setdefault("eval_every", preset["eval_every"])
    if bracket_seeds is None:
        bracket_seeds = preset.get("bracket_seeds", seeds)
    bracket_seeds = min(check_limit(bracket_seeds, "bracket_seeds", "seeds", 0), seeds)
    bracket_kw = preset.get("bracket", _BRACKET_OPTIONS)
    import dataclasses

    tests = [check_choice(t, "test", tuple(TEST_DOMAIN)) for t in tests]
    algorithms = [check_choice(a, "algorithm", ALGORITHMS) for a in algorithms]
    domains = list(dict.fromkeys(TEST_DOMAIN[t] for t in TEST_DOMAIN if t in tests))
    jobs = [RunSpec(domain=d, algorithm=a, seed=s, episodes=episodes, **options)
            for d in domains for a in algorithms for s in range(seeds)]
    if not ground_truth:
        return jobs
    proto = {d: RunSpec(domain=d, algorithm=algorithms[0], seed=0, episodes=episodes,
                        **options) for d in domains}
    for t in TEST_DOMAIN:
        if t not in tests:
            continue
        p = proto[TEST_DOMAIN[t]]
        tf = frozen_items(p.settings_fields())
        jobs.append(GroundTruthSpec("suite", p.domain, suite=t, test=tf, sources=p.sources))
    for d, p in proto.items():
        tf = frozen_items(p.settings_fields())
        jobs.append(GroundTruthSpec("training", d, test=tf, sources=p.sources))
        seen = set()
        for s in range(bracket_seeds):
            ef = frozen_items(dataclasses.replace(p, seed=s).estimation_fields())
            if ef in seen:  # a set that no seed changes (around your model): one bracket
                continue
            seen.add(ef)
            jobs.append(GroundTruthSpec("bracket", d, seed=s, test=tf, estimation=ef,
                                        bracket=tuple(bracket_kw), sources=p.sources))
    return jobs


# ----------------------------------------------------------------------------- a reproduction
@dataclass(frozen=True)
class YourModel:
    """Your own model in a reproduction (``rcmdp reproduce --model``): the files and the
    set it is judged with.

    Attributes
    ----------
    path : str or Path
        A model written by ``TabularCMDP.save``.
    perturbations : str or Path, optional
        A TOML file of the perturbed models it is tested on.
    set_file : str or Path, optional
        A saved set used in place of the estimation (its nominal kernel trains).
    horizon : int, optional
        Episode length T, when the model has none.
    estimate : int, optional
        Estimate the set from this many episodes of the uniform random policy (the
        paper's phase 1) instead of judging the model on itself.
    radius, support : optional
        The set around the model itself (the default: no estimation), of the given
        radius (default :data:`rcmdp_exact.names.USER_RADIUS`) and support ("nominal").
    """

    path: object
    perturbations: object = None
    set_file: object = None
    horizon: int | None = None
    estimate: int | None = None
    radius: float | None = None
    support: str | None = None

    def __post_init__(self):
        from pathlib import Path

        for name in ("path", "perturbations", "set_file"):
            value = getattr(self, name)
            if value is not None or name == "path":
                check_type(value, name, (str, Path), "give the path of the file")
        # the checked values are kept: plain numbers (numpy's do not go into JSON; -0.0 is 0)
        if self.horizon is not None:
            object.__setattr__(self, "horizon", check_limit(self.horizon, "horizon", "horizon"))
        if self.estimate is not None:
            object.__setattr__(self, "estimate",
                               check_limit(self.estimate, "estimate", "episodes"))
        if self.radius is not None:
            object.__setattr__(self, "radius", check_real(self.radius, "radius", 0.0))
        if self.support is not None:
            from ..names import AROUND_SUPPORTS

            check_choice(self.support, "support", AROUND_SUPPORTS)
        if (self.radius is not None or self.support is not None) and (
                self.estimate is not None or self.set_file is not None):
            raise InputError("radius and support shape the set built around the model "
                             "itself; they do not apply with set_file or estimate")


def _names(value, name: str) -> tuple:
    """``value`` (one name or a non-empty sequence of them) as a tuple of names, each
    once."""
    if isinstance(value, str):
        return (value,)
    try:
        out = tuple(value)
    except TypeError:
        raise InputError(f"{name} must be a name or a list of names, got "
                         f"{type(value).__name__}; give e.g. {name}=[...] or leave it "
                         f"out for all") from None
    if not out:
        raise InputError(f"{name} is empty: nothing would be computed; give at least one, "
                         f"or leave it out for all")
    bad = [v for v in out if not isinstance(v, str)]
    if bad:
        raise InputError(f"{name} must be names (strings), got {bad[0]!r} "
                         f"({type(bad[0]).__name__}); give e.g. {name}=[...] of names")
    return tuple(dict.fromkeys(out))  # (each once, in the order given: as the CLI)


@dataclass(frozen=True)
class ReproduceSpec:
    """What a reproduction computes: the plan of :func:`rcmdp_exact.protocol.reproduce`,
    checked once, here.  How it is computed (the store, the report folder, workers, a
    cluster, progress) are the arguments of ``reproduce``.

    Attributes
    ----------
    tests : tuple of str
        Among "inventory", "1A", "1B", "2A", "2B" (default: all; ``("model",)`` when
        ``model`` is given).
    algorithms : tuple of str
        Among :data:`ALGORITHMS` (default: the six of Table 1).
    seeds, episodes, bracket_seeds : int, optional
        Seed indices, training episodes and estimation seeds that get a bracket
        (defaults: the preset's, :data:`FULL` or :data:`QUICK`).
    quick : bool
        The quick preset for what is not given.
    model : YourModel, optional
        Reproduce the protocol on your own model.
    trainer : callable, optional
        A function of your own with the call of ``rcmdp_exact.learners.train`` (the
        learners by default); the specs name it by ``MODULE:QUALNAME``, as ``--trainer``.
    options : mapping
        Further fields of :class:`~.spec.RunSpec` (``n_draws``, ``offset_on``, ``critic``,
        ``set_kind``, ``sampled_episodes``...), kept as sorted ``(name, value)`` pairs.

    Examples
    --------
    >>> from rcmdp_exact.protocol import ReproduceSpec
    >>> spec = ReproduceSpec(tests=["inventory"], algorithms=["pg"], quick=True,
    ...                      options={"critic": "exact"})
    >>> spec.tests, dict(spec.options)["critic"]
    (('inventory',), 'exact')
    """

    tests: tuple = TESTS
    algorithms: tuple = ALGORITHMS
    seeds: int | None = None
    episodes: int | None = None
    quick: bool = False
    bracket_seeds: int | None = None
    model: YourModel | None = None
    trainer: object = None
    options: tuple = ()

    def __post_init__(self):
        tests = (USER_TEST,) if self.model is not None else _names(self.tests, "tests")
        tests = tuple(check_choice(t, "test", tuple(TEST_DOMAIN)) for t in tests)
        if self.model is not None and tuple(self.tests) not in ((USER_TEST,), TESTS):
            raise InputError(f"tests = {list(self.tests)} with your own model: its one "
                             f"test is {USER_TEST!r}; leave tests out")
        algorithms = tuple(check_choice(a, "algorithm", ALGORITHMS)
                           for a in _names(self.algorithms, "algorithms"))
        for name, limit in (("seeds", "seeds"), ("episodes", "episodes"),
                            ("bracket_seeds", "seeds")):
            if getattr(self, name) is not None:
                low = 0 if name == "bracket_seeds" else 1
                object.__setattr__(self, name, check_limit(getattr(self, name), name, limit,
                                                           low))
        check_type(self.quick, "quick", bool, "give True or False")
        if self.model is not None:
            check_type(self.model, "model", YourModel, "give YourModel(path, ...)")
        if self.trainer is not None and not callable(self.trainer):
            raise InputError(f"trainer must be a function, got "
                             f"{type(self.trainer).__name__}; give a callable with the "
                             f"call of rcmdp_exact.learners.train")
        try:
            opts = dict(self.options)
        except (TypeError, ValueError):
            raise InputError(f"options must be a mapping of RunSpec fields to values, got "
                             f"{self.options!r}; give e.g. {{'critic': 'exact'}}") from None
        known = {f.name for f in fields(RunSpec)} - {"domain", "algorithm", "seed",
                                                     "episodes"}
        unknown = sorted(set(opts) - known)
        if unknown:
            raise InputError(f"options {unknown} are not fields of RunSpec; give some of "
                             f"{sorted(known)} (tests, algorithms, seeds and episodes "
                             f"are the spec's own fields)")
        for name, choices in OPTIONS.items():
            if name in opts:
                check_choice(opts[name], name, choices)
        check_run_numbers(opts)  # the numbers now, not at jobs()
        object.__setattr__(self, "tests", tests)
        object.__setattr__(self, "algorithms", algorithms)
        object.__setattr__(self, "options", tuple(sorted(opts.items())))

    def jobs(self) -> list:
        """The jobs of the reproduction (:func:`plan`), with your model's files
        read and hashed (:func:`.user.load_problem`) when ``model`` is given."""
        options = dict(self.options)
        if self.trainer is not None:
            options.setdefault("trainer",
                               f"{self.trainer.__module__}:{self.trainer.__qualname__}")
        if self.model is not None:
            from .user import load_problem, spec_options

            m = self.model
            problem = load_problem(m.path, horizon=m.horizon, set_file=m.set_file,
                                   perturbations=m.perturbations, need_horizon="reproduce")
            options.update(spec_options(problem, m.estimate, m.radius, m.support))
        return plan(self.tests, self.algorithms, self.seeds, self.episodes,
                    quick=self.quick, bracket_seeds=self.bracket_seeds, **options)


def requested_tests(tests) -> list[str]:
    """The tests in Table 1 order."""
    return [t for t in TEST_DOMAIN if t in tests]


__all__ += ["requested_tests", "settings_fields"]
