"""Bridges to other libraries.

* :mod:`rcmdp_exact.interop.gym`: a Gymnasium environment for any
  :class:`~rcmdp_exact.TabularCMDP` (:class:`TabularCMDPEnv`, :func:`paper_env`,
  :func:`register_envs`); needs the optional extra ``pip install rcmdp_exact[gym]``.

The names are loaded on first use, so importing this package does not import
Gymnasium.

The other direction, models built from Gymnasium toy-text environments, QuantEcon
``DiscreteDP`` objects and pymdptoolbox arrays, is
:meth:`~rcmdp_exact.TabularCMDP.from_gymnasium`,
:meth:`~rcmdp_exact.TabularCMDP.from_quantecon` and
:meth:`~rcmdp_exact.TabularCMDP.from_mdptoolbox` (array code in
:mod:`rcmdp_exact.core.conversions`).
"""

from __future__ import annotations

import importlib

__all__ = ["TabularCMDPEnv", "paper_env", "register_envs"]


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module(".gym", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *__all__])
