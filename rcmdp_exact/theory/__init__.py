"""The theory: the paper's theorems checked on small models.

* :mod:`.gradients`: the exact Lagrangian policy gradient (Theorem 1) and adversary
  gradient (Theorem 2), the robust policy gradient;
* :mod:`.differences`: finite and central differences;
* :mod:`.estimators`: the paper's sampled estimators, their exact expectation and their
  Monte Carlo averages;
* :mod:`.verify`: the verification table of ``rcmdp verify``.

The public names are exported from :mod:`rcmdp_exact` itself.
"""
