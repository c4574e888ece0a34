"""Deprecated: the L1 inner problem moved to :mod:`rcmdp_exact.uncertainty.l1_sort`.

``from rcmdp_exact.inner import worst_case_l1`` keeps working (with a
DeprecationWarning) for one release; import it from :mod:`rcmdp_exact` or
:mod:`rcmdp_exact.uncertainty` instead.
"""

import warnings

from .uncertainty.l1_sort import l1_violation, worst_case_l1

warnings.warn("rcmdp_exact.inner is deprecated; import worst_case_l1 and l1_violation from "
              "rcmdp_exact or rcmdp_exact.uncertainty", DeprecationWarning, stacklevel=2)

__all__ = ["l1_violation", "worst_case_l1"]
