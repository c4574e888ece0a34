"""Result objects shared by every solver of the toolkit.

They follow :class:`scipy.optimize.OptimizeResult` in spirit: a dictionary whose keys
are also attributes, printed as an aligned table.  Solvers that iterate or call an
external solver add ``success``, ``status`` and ``message``.
"""

from __future__ import annotations

import warnings
from enum import StrEnum

import numpy as np


class Status(StrEnum):
    """The ``status`` of every result that has one (a string: compare with ``"optimal"``).

    ``optimal``: an exact or solver-optimal answer; ``converged``: an iteration met its
    tolerance; ``not_converged``: it did not (iteration limit, or a stall below the
    rounding error; the message says which); ``optimal_inaccurate``: a solver answered
    OPTIMAL_INACCURATE or its answer failed the numpy re-check; ``infeasible``: no policy meets the
    budgets; ``unbounded``, ``solver_error``, ``check_failed`` (the solver's answer
    failed the independent re-check), ``no_feasible_policy`` (a search found none),
    ``budget_exhausted`` (a search stopped at its work budget; its bounds still hold),
    ``bracket`` (valid lower and upper bounds that have not met).
    """

    OPTIMAL = "optimal"
    CONVERGED = "converged"
    NOT_CONVERGED = "not_converged"
    OPTIMAL_INACCURATE = "optimal_inaccurate"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    SOLVER_ERROR = "solver_error"
    CHECK_FAILED = "check_failed"
    NO_FEASIBLE_POLICY = "no_feasible_policy"
    BUDGET_EXHAUSTED = "budget_exhausted"
    BRACKET = "bracket"


#: Former field names and the fields they read now (with a DeprecationWarning).
ALIASES = {"cost": "costs", "cost_worst": "costs_worst", "multipliers": "lam",
           "multiplier": "lam", "lower_cost": "lower_costs",
           "upper_policy_cost": "upper_policy_costs", "min_robust_cost": "min_robust_costs",
           "robust_cost": "robust_costs"}
#: Former names that a result stores under the new name when it is built or written
#: (``Result(multipliers=x)`` holds ``lam``), so every result has one name for them.
WRITTEN_AS = {"multipliers": "lam", "multiplier": "lam", "lower_cost": "lower_costs",
              "upper_policy_cost": "upper_policy_costs",
              "min_robust_cost": "min_robust_costs"}


class Result(dict):
    """A dictionary with attribute access, returned by the toolkit's solvers.

    Examples
    --------
    >>> r = Result(value=1.0, success=True)
    >>> r.value
    1.0
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for old, new in WRITTEN_AS.items():
            if old in self:
                value = dict.pop(self, old)
                dict.setdefault(self, new, value)

    def __setitem__(self, key, value):
        super().__setitem__(WRITTEN_AS.get(key, key), value)

    def __missing__(self, key):
        new = ALIASES.get(key)
        if new is not None and new in self:
            warnings.warn(f"the result field {key!r} is now called {new!r}",
                          DeprecationWarning, stacklevel=3)
            return self[new]
        raise KeyError(key)

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError as exc:  # pragma: no cover - message only
            raise AttributeError(
                f"result has no field {name!r}; available fields: {sorted(self)}"
            ) from exc

    def __setattr__(self, name, value):
        self[name] = value

    def __delattr__(self, name):
        del self[name]

    def __dir__(self):
        return list(self.keys())

    def __repr__(self) -> str:
        if not self:
            return f"{type(self).__name__}()"
        width = max(len(k) for k in self) + 1
        lines = []
        for key, val in self.items():
            if isinstance(val, np.ndarray) and val.size > 8:
                text = f"array(shape={val.shape}, dtype={val.dtype})"
            else:
                text = repr(val).replace("\n", "\n" + " " * (width + 2))
            lines.append(f"{key.rjust(width)}: {text}")
        return "\n".join(lines)
