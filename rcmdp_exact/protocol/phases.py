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
"""

from __future__ import annotations

from ..names import BRACKET_ASCENT, BRACKET_BOXES, BRACKET_SECONDS
from .spec import (
    ALGORITHMS,
    TEST_DOMAIN,
    TESTS,
    GroundTruthSpec,
    RunSpec,
    frozen_items,
    settings_fields,
)

__all__ = [ "FULL", "QUICK", "plan"]

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


def requested_tests(tests) -> list[str]:
    """The tests in Table 1 order."""
    return [t for t in TEST_DOMAIN if t in tests]


__all__ += ["requested_tests", "settings_fields"]
