"""The core: the model and everything that is exact about one model.

* :mod:`.model`: :class:`~rcmdp_exact.TabularCMDP`, its validation, kernel swaps,
  save/load;
* :mod:`.conversions`: arrays in from and out to QuantEcon, pymdptoolbox and Gymnasium's
  toy-text tables;
* :mod:`.evaluation`: the one solve of I - gamma P_pi (``PolicySystem``), exact discounted
  and T-step evaluation;
* :mod:`.mdp`: the plain MDP solvers (the one Howard iteration, value and modified
  policy iteration, LP, backward induction);
* :mod:`.sampling`: the one rollout sampler;
* :mod:`.nn` and :mod:`.parametrisations`: the hand-written MLP with Adam, tabular and
  MLP policies and adversaries.

The public names are exported from :mod:`rcmdp_exact` itself.
"""
