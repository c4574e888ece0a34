"""The toolkit's vocabulary: option names and protocol constants, in one light module.

Everything here is plain Python (no numpy), so the command line can build its parser and
answer a bad argument without importing the numerical modules.  The modules that use
these names import them from here; nothing else defines them.
"""

from __future__ import annotations

__all__ = [
    "ADVERSARY_BASELINES",
    "ADVERSARY_FORMS",
    "ADVERSARY_MARGIN",
    "ADVERSARY_MULTIPLIER_SIGNALS",
    "ADVERSARY_SIGNALS",
    "ALGORITHMS",
    "AROUND_SUPPORTS",
    "BACKENDS",
    "BRACKET_ASCENT",
    "BRACKET_BOXES",
    "BRACKET_SECONDS",
    "CRITICS",
    "DEFAULT_HIDDEN",
    "DEFAULT_SET_KIND",
    "DEMANDS",
    "DOMAIN_OF_TEST",
    "ENTROPY_FORMS",
    "ESTIMATION_EPISODES",
    "EXACT_TOL",
    "GRADIENTS",
    "GROUND_TRUTH_FILES",
    "INITIAL_MULTIPLIER",
    "INNERS",
    "LIMITS",
    "LP_SOLVERS",
    "MAX_BOXES",
    "MAX_DRAWS",
    "MAX_EPISODES",
    "MAX_EVALUATIONS",
    "MAX_EXAMPLES",
    "MAX_HIDDEN",
    "MAX_MC_EPISODES",
    "MAX_RANDOM_MODELS",
    "MAX_ROLLOUT_BYTES",
    "MAX_SAMPLED_EPISODES",
    "MAX_SEEDS",
    "MAX_STEPS",
    "MULTIPLIER_SIGNALS",
    "MULTIPLIER_UPDATES",
    "NAV1_COST_LAYOUTS",
    "OFFSET_ON",
    "OPTION_ALGORITHMS",
    "PAPER_DOMAINS",
    "REVENUES",
    "ROBUST_ALGORITHMS",
    "RUN_OPTIONS",
    "SAMPLED_MULTIPLIER_UPDATES",
    "SCHEDULES",
    "SUITES",
    "SUPPORT_NOTES",
    "TABLE1_ALGORITHMS",
    "TESTS",
    "TEST_SUITES",
    "USER_DOMAIN",
    "USER_ESTIMATION_EPISODES",
    "USER_RADIUS",
    "USER_TEST",
    "VARIANTS",
    "WORKERS_PER_CPU",
]

#: Names of the paper's domains.
PAPER_DOMAINS = ("inventory", "nav1", "nav2")

#: The test suites of each domain, and all of them in Table 1's order.
TEST_SUITES = {"inventory": ("inventory",), "nav1": ("1A", "1B"), "nav2": ("2A", "2B")}
SUITES = ("inventory", "1A", "1B", "2A", "2B")

#: Episodes of the uniform random policy in the model-estimation phase: the paper's
#: numbers and the published implementation's defaults.
ESTIMATION_EPISODES = {
    "inventory": {"paper": 100, "reference": 10},
    "nav1": {"paper": 100, "reference": 20},
    "nav2": {"paper": 10_000, "reference": 10_000},
}

#: Your own model (``--model PATH.npz``): the name it has as a domain and as a test of
#: ``rcmdp reproduce`` (the model itself and the perturbations of ``--perturbations``),
#: and the default number of estimation episodes of the uniform random policy on it.
USER_DOMAIN = "model"
USER_TEST = "model"
USER_ESTIMATION_EPISODES = 100
#: Your own model is judged on itself unless estimation is asked for (``--estimate``):
#: the uncertainty set is built around the model's own kernel with this radius
#: (``--radius``) ...
USER_RADIUS = 0.1
#: ... on one of these supports (``--support``; the first is the default): the model's
#: own next states (nature adds no transition the model does not have), every state, or
#: the states the model's outcomes reach (models with outcomes only).
AROUND_SUPPORTS = ("nominal", "all", "outcomes")
#: What each support means, for the reports.
SUPPORT_NOTES = {
    "nominal": "the model's own next states, no new transitions",
    "all": "every state, nature may move mass to any state",
    "outcomes": "the states the model's outcomes reach",
}

#: The kind of uncertainty set the commands estimate from data when ``--set`` is not
#: given: the paper's L1 ball.  The kinds themselves are registered by the set classes
#: (``rcmdp_exact.uncertainty.kinds`` names the built-in ones without importing them).
DEFAULT_SET_KIND = "l1"

#: Initial Lagrange multiplier of the paper's learners (and the lam of ``rcmdp verify``):
#: 50 for Inventory Management, 1 for the navigation grids (Appendix D).
INITIAL_MULTIPLIER = {"inventory": 50.0, "nav1": 1.0, "nav2": 1.0}

#: Safe Navigation 1 cost layouts: the reference implementation's 7 cells (default) and
#: the 6 cells of the paper's figure.
NAV1_COST_LAYOUTS = ("reference", "paper")
#: Inventory revenue: 3.99 x units sold (default) or 3.99 x E[s'] (reference code).
REVENUES = ("economic", "reference")
#: Inventory demand discretisation: Phi(k) - Phi(k-1) (reference model, default) or
#: round(max(0, D)) (the reference simulator).
DEMANDS = ("reference", "rounded")
#: Test 1B: the drawn offset replaces a failed move (reference, default) or a successful
#: one (the paper's text).
OFFSET_ON = ("failure", "success")

#: The six sampled learners of the paper.
ALGORITHMS = ("pg", "cpg", "rcpg-value", "rcpg-constraint", "rcpg-lagrangian",
              "adversarial-rcpg")
#: The quantity each RCPG variant robustifies (the targets of the ground truth).
VARIANTS = ("value", "constraint", "lagrangian")

#: Hidden width of the MLP policy and adversary (the paper: 100 ReLU units).
DEFAULT_HIDDEN = 100
#: Largest relative error of a verification row expected to be exact.
EXACT_TOL = 1e-6

#: Budget of the bracket per domain in the ground-truth table: boxes of the branch and
#: bound, local search iterations per start, and a time limit in seconds that only guards
#: against a slow machine (the boxes bind first, so the table is the same on every run).
BRACKET_BOXES = 100
BRACKET_ASCENT = 20
BRACKET_SECONDS = 120.0
#: The files ``save_ground_truth`` (and ``rcmdp ground-truth --out``) writes.
GROUND_TRUTH_FILES = ("ground_truth_settings.csv", "ground_truth_summary.csv",
                      "ground_truth.json", "ground_truth_policies.npz")

#: Options of the learners (``rcmdp_exact.learners.train``; ``docs/learners.md``).
CRITICS = ("learned", "exact")
GRADIENTS = ("sampled", "exact")
#: The solvers of a set's worst case (``worst_case(..., method=)``, the learners'
#: ``inner``): the set's exact solver ("sort"; a sort for the L1 ball) and its
#: independent convex program through cvxpy ("lp"), a cross-check.
INNERS = ("sort", "lp")
#: The LP solvers of cvxpy the toolkit's linear programs name (the inner LP of the L1
#: ball, the CMDP LP).
LP_SOLVERS = ("HIGHS", "CLARABEL")
MULTIPLIER_UPDATES = ("adam-log", "sgd", "augmented")
#: The multiplier rules of the sampled loop ("augmented" needs exact costs).
SAMPLED_MULTIPLIER_UPDATES = ("adam-log", "sgd")
SCHEDULES = ("gradient", "step", "none")
ENTROPY_FORMS = ("weight", "gradient")
ADVERSARY_SIGNALS = ("printed", "corrected")
MULTIPLIER_SIGNALS = ("cost-to-go", "episode")
ADVERSARY_MULTIPLIER_SIGNALS = ("visited", "batch", "batch-hinge")
ADVERSARY_BASELINES = ("none", "critic")
ADVERSARY_FORMS = ("softmax", "mixture")
#: The default margin of the adversary's deviation penalty with the batch-hinge
#: multiplier: the penalty acts beyond (1 - margin) alpha (``docs/learners.md``).
ADVERSARY_MARGIN = 0.2
BACKENDS = ("numba", "numpy")

#: The reproduction (``rcmdp reproduce``; ``docs/reproduction.md``).
#: The six learners in the order of the paper's Table 1.
TABLE1_ALGORITHMS = ("adversarial-rcpg", "rcpg-lagrangian", "rcpg-value", "rcpg-constraint",
                     "cpg", "pg")
#: Algorithms that train on an uncertainty set and need the estimated ball.
ROBUST_ALGORITHMS = ("adversarial-rcpg", "rcpg-lagrangian", "rcpg-value",
                     "rcpg-constraint")
#: The tests of Table 1 and the domain each belongs to.
DOMAIN_OF_TEST = {"inventory": "inventory", "1A": "nav1", "1B": "nav1", "2A": "nav2",
                  "2B": "nav2"}
TESTS = tuple(DOMAIN_OF_TEST)
#: Named choices of a run where the paper and its published implementation differ (or
#: where the toolkit offers an exact alternative), with the default first.
RUN_OPTIONS = {
    "estimation": ("paper", "reference"),
    "offset_on": ("failure", "success"),
    "cost_layout": ("reference", "paper"),
    "revenue": ("economic", "reference"),
    "demand": ("reference", "rounded"),
    "train_on": ("nominal", "data"),
    "critic": ("learned", "exact"),
    "gradient": ("sampled", "exact"),
    "inner": ("sort", "lp"),
    "multiplier_update": ("adam-log", "sgd"),
}

#: Which learners each option of ``rcmdp train`` (and of ``rcmdp reproduce``) acts on
#: (``docs/learners.md``): the critic only steers the worst case of the RCPG variants,
#: the inner solver only the worst cases of the robust learners (their training and
#: their worst-case evaluation), the multiplier rule only learners that learn a
#: multiplier, the adversary's options only Adversarial RCPG, and ``reproduce
#: --train-on data`` only the learners without an uncertainty set (``rcmdp train
#: --train-on true`` acts on every learner).  An option given for a learner it does not
#: act on is refused.
OPTION_ALGORITHMS = {
    "critic": ("rcpg-value", "rcpg-constraint", "rcpg-lagrangian"),
    "inner": ("rcpg-value", "rcpg-constraint", "rcpg-lagrangian", "adversarial-rcpg"),
    "multiplier_update": ("cpg", "rcpg-value", "rcpg-constraint", "rcpg-lagrangian",
                          "adversarial-rcpg"),
    "adversary_multiplier_signal": ("adversarial-rcpg",),
    "adversary_form": ("adversarial-rcpg",),
    "train_on": ("pg", "cpg"),
}

# --------------------------------------------------------------------------- limits
#: Upper limits of the integers that size the work or the memory of a command; the
#: command line refuses a larger value before any work starts (``docs/cli.md``).
#: Training episodes (``train --episodes``, ``reproduce --episodes``): the learners keep
#: about 64 bytes of records per episode (and 16 more per constraint), so 10^7 episodes
#: hold about 1 GB; the paper trains for 5,000.
MAX_EPISODES = 10**7
#: Environment steps (``train --steps``): the compiled loop counts steps in a 64-bit
#: integer, and 10^10 steps take days.
MAX_STEPS = 10**10
#: Exact evaluations during training (episodes / eval-every, rounded up): each keeps
#: its metrics on every model it is evaluated on (a few hundred numbers).
MAX_EVALUATIONS = 10**5
#: Seeds (runs per algorithm and domain, ``reproduce --seeds`` and
#: ``--bracket-seeds``): 10^4 seeds are 180,000 runs (the paper: 20).
MAX_SEEDS = 10**4
#: Draws per N in tests 1B and 2B (``--n-draws``): every draw is a test setting held in
#: memory and evaluated (in ``ground-truth``, solved by an LP) exactly; the paper: 50.
MAX_DRAWS = 10**4
#: Sampled test episodes per setting (``reproduce --sampled-episodes``): a setting's
#: episodes are held in memory at once, about 8 KB per episode of 200 steps (0.8 GB at
#: the limit); the paper: 50.
MAX_SAMPLED_EPISODES = 10**5
#: Monte Carlo episodes per estimator (``verify --episodes``): sampled in batches of
#: 2,000, so memory stays small, but 10^7 episodes take hours per estimator.
MAX_MC_EPISODES = 10**7
#: Random Garnet models of ``verify --random``: each is a full finite-difference check.
MAX_RANDOM_MODELS = 10**3
#: Hidden width of the MLPs (``verify --hidden``): the finite differences take one
#: evaluation per parameter, about hidden x (inputs + actions).
MAX_HIDDEN = 10**4
#: Iterations of a planner (``planners.plan(iterations=...)``, ``suite score --episodes``
#: of a planner): its curve keeps a row of numbers per iteration, and each iteration is
#: at least one exact robust evaluation (10^7 of them take days on the suite's models).
MAX_ITERATIONS = 10**7
#: Branch-and-bound boxes of the bracket (``ground-truth --max-boxes``): every open
#: box is kept in memory.
MAX_BOXES = 10**6
#: Examples of a counterexample search (``testing.find_counterexample(max_examples=)``):
#: each is the claim checked on a drawn model; its ``time_limit`` is only a safety net.
MAX_EXAMPLES = 10**7
#: The horizon T given to your own model (``--horizon``): the test metric takes one
#: backward-induction step per time step, and the learners sample episodes of T steps.
_MAX_HORIZON = 10**6
#: Memory of the episodes that one call of the sampler holds at once
#: (``rcmdp_exact.core.sampling.rollout``, behind ``estimate`` and ``collect_counts``): 33
#: bytes per step (four int64 arrays and a bool mask of shape (episodes, T)), so 4 GiB
#: is about 650,000 episodes of 200 steps (the paper's largest estimation: 10,000).
MAX_ROLLOUT_BYTES = 4 * 2**30
#: Local worker processes: at most this many per CPU (``os.cpu_count()``); more only
#: wait for a core and each holds its own copy of the models (about 270 MB).
WORKERS_PER_CPU = 4

#: Each limit with what it bounds and why, for messages (``commands/_args.py``).
LIMITS = {
    "episodes": (MAX_EPISODES, "training episodes",
                 "the learners keep about 64 bytes of records per episode"),
    "steps": (MAX_STEPS, "environment steps", "10^10 steps take days"),
    "evaluations": (MAX_EVALUATIONS, "exact evaluations during training",
                    "each keeps its metrics in memory"),
    "seeds": (MAX_SEEDS, "seeds", "10^4 seeds are 180,000 runs; the paper has 20"),
    "draws": (MAX_DRAWS, "draws per N",
              "every draw is a test setting held in memory and evaluated exactly"),
    "sampled_episodes": (MAX_SAMPLED_EPISODES, "sampled episodes per setting",
                         "a setting's episodes are held in memory at once"),
    "mc_episodes": (MAX_MC_EPISODES, "Monte Carlo episodes",
                    "10^7 episodes take hours per estimator"),
    "random_models": (MAX_RANDOM_MODELS, "random models",
                      "each is a full finite-difference check"),
    "hidden": (MAX_HIDDEN, "hidden units",
               "the finite differences take one evaluation per parameter"),
    "iterations": (MAX_ITERATIONS, "planner iterations",
                   "each is an exact robust evaluation, and the curve keeps a row per "
                   "iteration"),
    "boxes": (MAX_BOXES, "branch-and-bound boxes", "every open box is kept in memory"),
    "examples": (MAX_EXAMPLES, "examples of a counterexample search",
                 "each is a claim checked on a drawn model: 10^7 take days"),
    "horizon": (_MAX_HORIZON, "steps of the horizon",
                "the test metric takes one backward-induction step per time step"),
}
