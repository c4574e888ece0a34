r"""A Gymnasium environment for any :class:`~rcmdp_exact.TabularCMDP`.

:class:`TabularCMDPEnv` samples the model: the start state from ``p0``, the next state
from :math:`P(\cdot \mid s, a)`, and returns

* the reward :math:`R(s, a, s')` in the step tuple,
* the cost vector :math:`C(s, a, s', \cdot)` (K,) in ``info["cost"]``, the convention of
  safety-gymnasium's Gymnasium-compatible wrappers,
* ``terminated`` when :math:`s'` is a terminal state of the model,
* ``truncated`` when the episode reaches ``max_episode_steps`` (default: the model's
  horizon T; never if the model has none) without terminating.

Sums of rewards and costs over an episode are the undiscounted T-step quantities whose
expectations :func:`~rcmdp_exact.evaluate_finite_horizon` computes exactly; the
discount of the model is left to the learner.  Observations are the state index
(``Discrete(S)``, default) or the model's ``state_features`` (``Box``).

Gymnasium is an optional dependency: ``pip install rcmdp_exact[gym]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    import gymnasium
    from gymnasium import spaces
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "rcmdp_exact.interop.gym needs Gymnasium, an optional dependency; install it "
        "with: pip install rcmdp_exact[gym]"
    ) from exc

from .._checks import check_choice, check_int
from ..core.model import TabularCMDP, check_model
from ..core.model_checks import ModelError
from ..core.sampling import draw_one
from ..domains import paper_domain

__all__ = ["ENV_IDS", "TabularCMDPEnv", "paper_env", "register_envs"]

#: Gymnasium ids registered by :func:`register_envs`, per paper domain.
ENV_IDS = {
    "inventory": "rcmdp_exact/InventoryManagement-v0",
    "nav1": "rcmdp_exact/SafeNavigation1-v0",
    "nav2": "rcmdp_exact/SafeNavigation2-v0",
}
OBSERVE = ("index", "features")


class TabularCMDPEnv(gymnasium.Env):
    """Gymnasium environment that samples a :class:`~rcmdp_exact.TabularCMDP`.

    Parameters
    ----------
    model : TabularCMDP
        The model to sample (dense or sparse).
    observe : {"index", "features"}
        Observe the state index (``Discrete(S)``) or ``model.state_features``
        (``Box`` of shape (F,), float64, bounded by the features' range).
    max_episode_steps : int, optional
        Truncate after this many steps; default ``model.horizon`` (no truncation if
        the model has no horizon).
    render_mode : {None, "ansi"}
        ``"ansi"``: :meth:`render` returns a line with the step and the state label.

    Notes
    -----
    ``step`` returns ``(obs, reward, terminated, truncated, info)`` with
    ``info = {"cost": array (K,), "state": s', "t": steps taken}``.  A step from a
    terminal state (possible only when p0 puts mass on one) earns nothing and
    terminates.  Seed with ``reset(seed=...)``: the same seed and actions give the
    same episode.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012 (Gymnasium API)

    def __init__(self, model: TabularCMDP, observe: str = "index",
                 max_episode_steps: int | None = None, render_mode: str | None = None):
        check_model(model)
        check_choice(observe, "observe", OBSERVE,
                     hint=" ('index': Discrete state index; 'features': Box of "
                          "model.state_features)")
        check_choice(render_mode, "render_mode", (None, "ansi"))
        T = model.horizon if max_episode_steps is None else max_episode_steps
        if T is not None:
            check_int(T, "max_episode_steps", 1, hint=" (or None)")
        self.model = model
        self.observe = observe
        self.max_episode_steps = None if T is None else int(T)
        self.render_mode = render_mode
        S, A = model.n_states, model.n_actions
        self._P = model.P_sparse  # CSR (S*A, S)
        self._R = model.R  # (S, A, S) (a broadcast view if R depends on (s, a) only)
        self._C = model.C  # (S, A, S, K)
        self._cum_p0 = np.cumsum(model.p0)
        self._terminal = model.terminal
        self.action_space = spaces.Discrete(A)
        if observe == "index":
            self.observation_space = spaces.Discrete(S)
        else:
            feat = np.asarray(model.state_features, dtype=np.float64)
            self._features = feat
            self.observation_space = spaces.Box(
                low=feat.min(axis=0), high=feat.max(axis=0), shape=(feat.shape[1],),
                dtype=np.float64,
            )
        self._state: int | None = None
        self._t = 0
        self._done = False

    # ----------------------------------------------------------------- helpers
    @property
    def state(self) -> int | None:
        """Current state index (None before the first reset)."""
        return self._state

    @property
    def elapsed_steps(self) -> int:
        """Steps taken in the current episode."""
        return self._t

    def _obs(self, s: int):
        if self.observe == "index":
            return int(s)
        return self._features[s].copy()

    def _sample(self, cum: np.ndarray) -> int:
        """Inverse-CDF draw of :func:`rcmdp_exact.core.sampling.draw_one`."""
        return int(draw_one(cum, self.np_random.random()))

    # ----------------------------------------------------------------- Gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode in a state drawn from p0; returns ``(obs, {"state": s})``.
        ``seed``: an int >= 0 (or None: continue the environment's stream)."""
        if seed is not None:
            # a plain int: gymnasium refuses numpy's integers
            seed = check_int(seed, "seed", 0, hint="; give an int >= 0 or None")
        super().reset(seed=seed)
        self._state = self._sample(self._cum_p0)
        self._t = 0
        self._done = False
        return self._obs(self._state), {"state": self._state}

    def step(self, action):
        """One transition; see the class notes for the returned tuple."""
        if self._state is None or self._done:
            raise ModelError("call reset() before step()" if self._state is None else
                             "the episode is over (terminated or truncated); call reset()")
        check_int(action, "action", 0, self.action_space.n - 1,
                  hint=f" (the action space is Discrete({self.action_space.n}))")
        s, a = self._state, int(action)
        K = self.model.n_constraints
        if self._terminal[s]:
            s_next, reward, cost = s, 0.0, np.zeros(K)
        else:
            row = s * self.model.n_actions + a
            lo, hi = self._P.indptr[row], self._P.indptr[row + 1]
            idx = self._sample(np.cumsum(self._P.data[lo:hi]))
            s_next = int(self._P.indices[lo + idx])
            reward = float(self._R[s, a, s_next])
            cost = np.array(self._C[s, a, s_next], dtype=np.float64)
        self._state = s_next
        self._t += 1
        terminated = bool(self._terminal[s_next])
        truncated = (not terminated and self.max_episode_steps is not None
                     and self._t >= self.max_episode_steps)
        self._done = terminated or truncated
        info = {"cost": cost, "state": s_next, "t": self._t}
        return self._obs(s_next), reward, terminated, bool(truncated), info

    def render(self):
        """The step and the state label as text (``render_mode="ansi"``)."""
        if self.render_mode != "ansi":
            return None
        s = self._state
        lab = self.model.state_labels
        name = "-" if s is None else (str(s) if lab is None else f"{s} {lab[s]}")
        return f"t={self._t} state={name}"


def paper_env(name: str, observe: str = "index", **kwargs) -> TabularCMDPEnv:
    """A :class:`TabularCMDPEnv` of the training model of a paper domain.

    ``name`` is one of "inventory", "nav1", "nav2"; ``kwargs`` go to
    :class:`TabularCMDPEnv` (``max_episode_steps``, ``render_mode``).
    """
    return TabularCMDPEnv(paper_domain(name), observe=observe, **kwargs)


def register_envs() -> tuple[str, ...]:
    """Register the paper domains with ``gymnasium.make`` under :data:`ENV_IDS`.

    The spec of each id carries the domain's horizon as ``max_episode_steps`` (200 for
    Safe Navigation 1, 100 otherwise).  Returns the registered ids; calling it again is
    harmless.
    """
    for name, env_id in ENV_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(
                id=env_id,
                entry_point="rcmdp_exact.interop.gym:paper_env",
                kwargs={"name": name},
                max_episode_steps=paper_domain(name).horizon,
            )
    return tuple(ENV_IDS.values())
