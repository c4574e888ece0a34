"""Work budgets, not clocks, decide the bracket (issue 43).

Every phase of ``rcmdp_bracket`` and ``certified_dual`` is bounded by a count of work;
the time limit is a safety net that stops a run and says so.  The machine's load is
simulated here without a busy machine: the clock the code reads (``time.perf_counter``,
and ``time.monotonic`` for good measure) is replaced by one that runs 100 or 1000 times
faster, or by one on which 99% of the time limit has gone by the time the run starts its
work.  A bracket whose numbers depended on elapsed time (a share of the time limit for a
phase, a forecast of whether a batch fits in the time left, a solver given the time
left) would change under these clocks; the bracket must be the same, bit for bit, as
under the real clock.  Then the safety net: a clock that passes the limit after a fixed
number of reads stops the run at once, and the result says so (``reproducible`` False,
the phase, "NOT reproducible"), with both bounds still certified.  Last, the Dask path:
chunks run on two stand-in workers in a shuffled order give the serial bracket.
"""

import functools
import pickle
import time

import numpy as np
import pytest
from test_ground_truth import scale
from test_ground_truth_bracket import (
    mid_budget_model,
    robust_numbers,
    search_policies,
)

from rcmdp_exact import InputError, OptionError
from rcmdp_exact.ground_truth import VARIANTS, BracketSettings, certified_dual, rcmdp_bracket

#: A run that exercises every phase: the variants' targets, the Lagrangian search, the
#: lower side's search, the branch and bound with its deeper search after 20 boxes, and
#: the certified dual.
BUDGET = dict(progress=False, variants=VARIANTS, max_boxes=60, deep_after=20,
              deep_starts=2, deep_ascent=30, dual_evaluations=40, rtol=1e-9, atol=0.0)


def _model():
    return mid_budget_model(3, 0.5, n_constraints=2)


def _fields(res) -> dict:
    """Every number of a bracket that a machine must not change (not ``seconds``, nor
    the trace's first column, seconds)."""
    out = {k: res[k] for k in ("lower", "upper", "gap", "boxes", "open_boxes", "closed",
                               "stopped", "status", "message", "lower_method",
                               "upper_method", "n_candidates", "mix_theta",
                               "reproducible")}
    out.update(lam=res.lam, policy=res.policy, upper_policy=res.policies["upper"],
               lower_costs=res.lower_costs, trace=np.asarray(res.trace)[:, 1:],
               history_g=res.history["g"])
    if res.dual is not None:
        out.update(dual_lo=res.dual.lo, dual_hi=res.dual.hi, dual_n=res.dual.evaluations,
                   dual_lam=res.dual.lam)
    for v, r in res.variants.items():
        out[f"variant_{v}"] = (r.policy, r.lam, r.value)
    return out


def _assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, tuple):
            for u, v in zip(x, y, strict=True):
                np.testing.assert_array_equal(u, v, err_msg=key)
        elif isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=key)
        else:
            assert x == y, (key, x, y)


class _Clock:
    """A replacement for ``time.perf_counter``: ``speed`` times the real clock from the
    first read on, or (``used``) the first read at 0 and every later one at ``used``
    seconds plus a nanosecond per read (monotone)."""

    def __init__(self, real, speed=1.0, used=None):
        self.real, self.speed, self.used = real, speed, used
        self.t0 = None
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        now = self.real()
        if self.t0 is None:
            self.t0 = now
            return now
        if self.used is not None:
            return self.t0 + self.used + 1e-9 * self.reads
        return self.t0 + (now - self.t0) * self.speed


def _under(clock, call, monkeypatch):
    monkeypatch.setattr(time, "perf_counter", clock)
    monkeypatch.setattr(time, "monotonic", clock)
    try:
        return call()
    finally:
        monkeypatch.undo()


@functools.cache
def _under_the_real_clock(limit):
    """The bracket and the certified dual of :func:`_model` under the real clock, run once
    per time limit for the clocks compared with them."""
    m, uset = _model()
    return (rcmdp_bracket(m, uset, time_limit=limit, **BUDGET),
            certified_dual(m, uset, max_evaluations=60, time_limit=limit))


@pytest.mark.parametrize(("what", "speed", "used", "limit"), [
    ("the clock 100 times faster", 100.0, None, 1e7),
    ("the clock 1000 times faster", 1000.0, None, 1e7),
    # a machine so busy that the run reaches its work with 99% of the limit gone: a
    # phase given a share of the time (the variants had a quarter) or a forecast of the
    # time left would cut its work; the safety net itself never expires here (the same
    # limit as the other rows, so that the three share one run under the real clock)
    ("99% of the time limit gone", 1.0, 0.99e7, 1e7),
])
def test_the_bracket_does_not_depend_on_the_clock(what, speed, used, limit, monkeypatch):
    m, uset = _model()
    plain, dual = _under_the_real_clock(limit)
    assert plain.reproducible and plain.dual is not None and len(plain.variants) == 3
    assert plain.boxes > BUDGET["deep_after"]  # the deeper search ran
    clock = _Clock(time.perf_counter, speed, used)
    busy = _under(clock, lambda: rcmdp_bracket(m, uset, time_limit=limit, **BUDGET),
                  monkeypatch)
    assert clock.reads > 100, what  # the code did read this clock
    _assert_same(_fields(plain), _fields(busy))
    busy_dual = _under(_Clock(time.perf_counter, speed, used),
                       lambda: certified_dual(m, uset, max_evaluations=60, time_limit=limit),
                       monkeypatch)
    assert (dual.lo, dual.hi, dual.evaluations, dual.message) == \
        (busy_dual.lo, busy_dual.hi, busy_dual.evaluations, busy_dual.message)
    assert dual.reproducible and busy_dual.reproducible


class _Deadline:
    """A clock that reads 0 for its first ``n`` reads after the start and then jumps an
    hour ahead: a run past its time limit after a fixed amount of work."""

    def __init__(self, n):
        self.n, self.reads = n, 0

    def __call__(self) -> float:
        self.reads += 1
        return 0.0 if self.reads <= self.n else 3600.0 + 1e-9 * self.reads


@pytest.mark.parametrize("reads", [1, 40, 400, 4000])
def test_the_safety_net_stops_a_run_and_says_so(reads, monkeypatch):
    """Cut after ``reads`` reads of the clock (in another phase each time): the run stops,
    the result says that the time limit stopped it, in which phase, and that it is not
    reproducible; both bounds still hold (checked against an independent robust
    evaluation of every deterministic and 50 random policies)."""
    m, uset = _model()
    kw = dict(BUDGET, max_boxes=10**6, deep_after=0)
    res = _under(_Deadline(reads), lambda: rcmdp_bracket(m, uset, time_limit=60.0, **kw),
                 monkeypatch)
    assert res.reproducible is False and res.stopped_by_time_limit is True
    assert isinstance(res.time_limit_phase, str) and res.time_limit_phase
    assert "STOPPED BY THE TIME LIMIT of 60 s" in res.message
    assert "NOT reproducible" in res.message and res.time_limit_phase in res.message
    assert res.boxes < 10**6
    best, free = _the_best_found_and_a_free_run()
    tol = 1e-9 * scale(m)
    assert res.upper >= best - tol
    if np.isfinite(res.lower):
        value, costs = robust_numbers(m, uset, res.policy)
        assert np.all(costs <= m.d + tol) and res.lower <= value + tol
    assert free.reproducible and free.stopped_by_time_limit is False
    assert "time limit" not in free.message.lower()


@functools.cache
def _the_best_found_and_a_free_run():
    """What the four cut runs are compared with, computed once: the best robust-feasible
    value among every deterministic and 50 random policies of :func:`_model` (an
    independent robust evaluation), and the same run without a time limit."""
    m, uset = _model()
    found = [robust_numbers(m, uset, pi) for pi in search_policies(m, 0, n_random=50)]
    best = max(v for v, c in found if np.all(c <= m.d))
    kw = dict(BUDGET, max_boxes=60, deep_after=0)
    return best, rcmdp_bracket(m, uset, time_limit=None, **kw)


def test_the_certified_dual_says_when_its_time_limit_stopped_it(monkeypatch):
    m, uset = _model()
    res = _under(_Deadline(3), lambda: certified_dual(m, uset, max_evaluations=10**6,
                                                      time_limit=5.0), monkeypatch)
    assert res.reproducible is False and res.stopped_by_time_limit
    assert "STOPPED BY THE TIME LIMIT of 5 s" in res.message
    assert res.evaluations < 10**6 and res.lo <= res.hi
    full = certified_dual(m, uset, max_evaluations=200)
    assert full.reproducible and res.lo <= full.hi + 1e-9 and full.lo <= res.hi + 1e-9


# --------------------------------------------------------------------------- Dask order
class _Future:
    def __init__(self, fn, args):
        self.fn, self.args, self.status, self.value = fn, args, "pending", None

    def run(self, recipe):
        self.value = self.fn(recipe, *self.args)
        self.status = "finished"

    def result(self):
        return self.value

    def cancel(self):  # pragma: no cover - only past the safety net
        self.status = "cancelled"


class _ShuffledClient:
    """A stand-in for a Dask client with two workers, each with its own copy of the
    scattered game (unpickled, as in a worker process: its own game, LP solver and
    caches), running the chunks of a round in a shuffled order on either worker."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.workers = None
        self.ran = []

    def scatter(self, obj, broadcast=True, hash=False):
        blob = pickle.dumps(obj)
        self.workers = [pickle.loads(blob), pickle.loads(blob)]
        return "recipe"

    def submit(self, fn, remote, *args, pure=False):
        assert remote == "recipe"
        return _Future(fn, args)

    def wait(self, futures, timeout):
        order = [int(i) for i in self.rng.permutation(len(futures))]
        workers = [int(w) for w in self.rng.integers(0, 2, size=len(futures))]
        for i, w in zip(order, workers, strict=True):
            futures[i].run(self.workers[w])
        self.ran.append((order, workers))


@pytest.mark.parametrize("seed", [0, 1])
def test_chunks_finishing_in_any_order_on_any_worker_give_the_serial_bracket(seed,
                                                                            monkeypatch):
    """RiverSwim-6 at 200 boxes: rounds of up to four chunks of 16 children."""
    import rcmdp_exact.ground_truth.boxes as boxes
    from rcmdp_exact.domains import classic_instance

    m, uset = classic_instance("riverswim", n=6)
    kw = dict(progress=False, variants=(), max_boxes=200, time_limit=None,
              dual_evaluations=0)
    serial = _serial_riverswim(**kw)
    client = _ShuffledClient(seed)
    monkeypatch.setattr(boxes, "_wait", client.wait)
    shuffled = rcmdp_bracket(m, uset, client=client, **kw)
    assert any(order != sorted(order) for order, _ in client.ran)  # out of order
    assert {w for _, ws in client.ran for w in ws} == {0, 1}  # on both workers
    assert serial.boxes > 100 and not serial.closed
    _assert_same(_fields(serial), _fields(shuffled))


@functools.cache
def _serial_riverswim(**kw):
    """The serial bracket of RiverSwim-6, computed once for both shuffles."""
    from rcmdp_exact.domains import classic_instance

    return rcmdp_bracket(*classic_instance("riverswim", n=6), **kw)


# --------------------------------------------------------------------------- hostile input
def _no_work(monkeypatch):
    """Building a game is the first work of rcmdp_bracket and certified_dual: fail there."""
    import rcmdp_exact.ground_truth.bracket as bracket
    import rcmdp_exact.ground_truth.dual_certificate as dual_certificate

    def refuse(*args, **kwargs):
        pytest.fail("work started before the options were checked")

    monkeypatch.setattr(bracket, "RobustGame", refuse)
    monkeypatch.setattr(dual_certificate, "RobustGame", refuse)


def _mb(**kw):
    return lambda m, b: rcmdp_bracket(m, b, progress=False, **kw)


#: Options refused before any work, with the facts the one-line error names (the option,
#: its value, the memory it would need, the largest value within the limit or the fix).
#: Before issue 39/43 the memory rows were raw MemoryErrors (deep_starts = 10**9: 59.6
#: GiB) or ran for minutes with gigabytes (n_grid = 10**6: 25 s and 3 GB).
REFUSED = [
    # new guards (each failed on the code before issues 39/43/40: work started)
    (_mb(n_grid=10**7), InputError, ("n_grid = 10,000,000", "GiB", "give n_grid <=",
                                     "BRACKET_MEMORY")),
    (_mb(n_grid=10**9), InputError, ("n_grid = 1,000,000,000", "GiB", "give n_grid <=")),
    (_mb(deep_starts=10**9), InputError, ("deep_starts = 1,000,000,000", "GiB",
                                          "give deep_starts <=")),
    (_mb(n_starts=10**9), InputError, ("n_starts = 1,000,000,000", "give n_starts <=")),
    (_mb(n_cuts=10**10), InputError, ("n_cuts = 10,000,000,000", "give n_cuts <=")),
    (_mb(dual_evaluations=10**12), InputError, ("dual_evaluations", "give dual_evaluations <=",
                                                "DUAL_MEMORY")),
    (_mb(time_limit=float("inf")), InputError, ("time_limit", "inf", "None")),
    (_mb(time_limit=float("nan")), InputError, ("time_limit", "nan", "None")),
    (_mb(kernel_rounds=2), TypeError, ("kernel_rounds",)),  # removed (issue 40)
    (_mb(box_bounds=("value",)), OptionError, ("box_bounds", "'value'", "'local', 'lp'")),
    (_mb(split_point="corner"), OptionError, ("split_point", "'corner'", "'middle', 'lp'")),
    (lambda m, b: BracketSettings(lower=3), InputError, ("lower", "LowerSearch", "int")),
    (lambda m, b: certified_dual(m, b, max_evaluations=10**12), InputError,
     ("max_evaluations", "GiB", "give max_evaluations <=")),
    # guards that held before, kept as rows of the table
    (_mb(time_limit="10"), InputError, ("time_limit", "'10'")),
    (_mb(time_limit=True), InputError, ("time_limit", "True")),
    (lambda m, b: BracketSettings(max_boxes=0), InputError, ("max_boxes", "0")),
    (lambda m, b: certified_dual(m, b, time_limit=0.0), InputError, ("time_limit", "0.0")),
    (lambda m, b: certified_dual(m, b, time_limit=float("inf")), InputError,
     ("time_limit", "inf")),
]


@pytest.mark.parametrize(("call", "error", "facts"), REFUSED)
def test_hostile_options_are_refused_before_any_work(call, error, facts, monkeypatch):
    from helpers import raises_fact

    m, uset = _model()
    _no_work(monkeypatch)
    with raises_fact(error, *facts):
        call(m, uset)


class _FiresIn:
    """A safety net that expires when the run enters the phase ``target`` (the start of
    its words), whatever the clock: the run's behaviour past its time limit, in that
    phase, without a slow machine."""

    def __init__(self, target):
        from rcmdp_exact.robust.engine import SafetyNet

        outer = self

        class Net(SafetyNet):
            def expired(self):
                if not self.fired and self.phase.startswith(target):
                    self.trip()
                    outer.net = self
                return super().expired()

        self.cls, self.net = Net, None


def _count_work(monkeypatch):
    """Record the batch size of every robust fixed point, and whether the net had fired."""
    from rcmdp_exact.robust.engine import RobustGame

    calls = []
    solve, adversary = RobustGame.solve, RobustGame.adversary

    def counted(method, kind):
        def run(self, g, *args, **kwargs):
            calls.append((kind, g.shape[0], self.net is not None and self.net.fired))
            return method(self, g, *args, **kwargs)
        return run

    monkeypatch.setattr(RobustGame, "solve", counted(solve, "solve"))
    monkeypatch.setattr(RobustGame, "adversary", counted(adversary, "adversary"))
    return calls


#: Options that cannot finish in a time limit: each phase is cut by the safety net within
#: one batch of work.  Before issue 43 a grid of 10**5 points was one batch (25 s and 3
#: GB for 10**6 with time_limit = 2), and the share of the time limit given to the
#: variants was forecast, not kept.
HONOURED = [
    ("the Lagrangian search", dict(n_grid=10**5)),
    ("the target of variant value", dict(variants=("value",), n_grid=10**4)),
    ("the search of the lower side", dict(n_starts=10**4, n_ascent=10**4)),
    ("the branch and bound", dict(max_boxes=10**6, rtol=0.0, atol=0.0, deep_after=0)),
]


@pytest.mark.parametrize(("phase", "options"), HONOURED)
def test_a_time_limit_cuts_every_phase_within_one_batch(phase, options, monkeypatch):
    """The net expires as the run enters ``phase``: the run stops there (the result names
    it), no batch of fixed points ever exceeds dual.BATCH_PROBLEMS problems, and after
    the net expires at most one batch and the final certification run (the stated
    overhead)."""
    import rcmdp_exact.ground_truth.bracket as bracket
    from rcmdp_exact.ground_truth.dual import BATCH_PROBLEMS

    m, uset = _model()
    fires = _FiresIn(phase)
    monkeypatch.setattr(bracket, "SafetyNet", fires.cls)
    calls = _count_work(monkeypatch)
    res = rcmdp_bracket(m, uset, progress=False, time_limit=1e6, **options)
    assert fires.net is not None and res.time_limit_phase == phase
    assert res.reproducible is False and "NOT reproducible" in res.message
    assert max(j for _, j, _ in calls) <= BATCH_PROBLEMS
    after = sum(j for _, j, fired in calls if fired)
    assert after <= BATCH_PROBLEMS + 8 * (1 + m.n_constraints), calls[-20:]
    assert res.lower <= res.upper and res.dual is None


def test_a_time_limit_cuts_the_certified_dual_within_one_fixed_point(monkeypatch):
    import rcmdp_exact.ground_truth.dual_certificate as dc

    m, uset = _model()
    fires = _FiresIn("")
    monkeypatch.setattr(dc, "SafetyNet", fires.cls)
    calls = _count_work(monkeypatch)
    res = dc.certified_dual(m, uset, max_evaluations=10**6, time_limit=1e6)
    assert res.reproducible is False and res.evaluations < 50
    assert sum(1 for _, _, fired in calls if fired) <= 2


def test_highs_gets_the_time_left_on_top_of_its_own_run_time():
    """HiGHS compares its time_limit with the run time summed over every run of the
    instance, and the occupancy LP reuses one instance for every box: given the time left
    alone, a long run's LPs stopped at once (and tripped the net) while minutes were
    left.  A stand-in solver that has run for 1000 s must be given 1000 s plus the time
    left, and a run stopped at that limit trips the net."""
    import highspy

    from rcmdp_exact.ground_truth.occupancy_bound import run_highs
    from rcmdp_exact.robust.engine import SafetyNet

    class Solver:
        status = highspy.HighsModelStatus.kOptimal

        def __init__(self):
            self.options = {}

        def getRunTime(self):
            return 1000.0

        def setOptionValue(self, key, value):
            self.options[key] = value

        def run(self):
            pass

        def getModelStatus(self):
            return self.status

    net, h = SafetyNet(60.0), Solver()
    run_highs(h, net, "an LP")
    assert 1000.0 + 50.0 < h.options["time_limit"] <= 1000.0 + 60.0 and not net.fired
    run_highs(h, None, "an LP")
    assert h.options["time_limit"] == np.inf
    h.status = highspy.HighsModelStatus.kTimeLimit
    run_highs(h, net, "an LP")
    assert net.fired and net.fired_in == "an LP"
