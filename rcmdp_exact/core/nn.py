r"""A hand-written numpy MLP with a softmax head, and the Adam optimiser.

The network has one hidden ReLU layer (the policy and adversary of the paper's
Table "Parameter settings": 100 units):

.. math::

    z = x W_1 + b_1, \qquad h = \max(z, 0), \qquad
    \ell = h W_2 + b_2, \qquad p = \operatorname{softmax}(\ell),

with ``x`` of shape (N, F), ``W1`` (F, H), ``b1`` (H,), ``W2`` (H, O), ``b2`` (O,).
Everything is float64.  The parameters live in one flat vector in the order
``W1, b1, W2, b2`` (row-major); :attr:`MLP.W1` and friends are views into it, so
:meth:`MLP.get_params` / :meth:`MLP.set_params` move the whole network at once.

Every method takes an optional ``params`` argument: without it the network's own
parameters are used; with it the method is a pure function of ``params``, which is
what gradient checks and the exact gradients of :mod:`rcmdp_exact.theory.gradients` need.

Backward pass
-------------
For a cotangent :math:`g = \partial f / \partial \ell` (N, O) of a scalar ``f``,
:meth:`MLP.backward` returns the vector-Jacobian product

.. math::

    \partial f/\partial W_2 = h^\top g, \quad \partial f/\partial b_2 = \mathbf 1^\top g,
    \quad \delta = (g W_2^\top) \odot [z > 0], \quad
    \partial f/\partial W_1 = x^\top \delta, \quad \partial f/\partial b_1 = \mathbf 1^\top\delta.

At ``z = 0`` the ReLU is not differentiable; the backward pass uses the derivative 0
there.  Finite differences straddling a kink disagree with it, so the default
initialisation draws small non-zero biases (an input of all zeros, such as the start
cell (0, 0) of the navigation grids, would otherwise put every hidden unit exactly on
its kink); :meth:`MLP.relu_margin` reports the smallest :math:`|z|`.

Through the softmax, :meth:`MLP.vjp_probs` maps a cotangent ``G`` on the
probabilities to :math:`g = p \odot (G - \sum_o p_o G_o)` and calls
:meth:`MLP.backward`.  :meth:`MLP.grad_log_softmax` gives the per-sample gradients
:math:`\nabla \log p(y_n \mid x_n)` (N, n_params), whose logit part is
:math:`e_{y_n} - p_n`; :meth:`MLP.score` gives them for every output (N, O, n_params).

Adam
----
:class:`Adam` is the optimiser of Kingma and Ba (2015):
:math:`m \leftarrow \beta_1 m + (1-\beta_1) g`, :math:`v \leftarrow \beta_2 v + (1-\beta_2) g^2`,
:math:`\theta \leftarrow \theta - \eta\, \hat m / (\sqrt{\hat v} + \epsilon)` with the bias
corrections :math:`\hat m = m / (1-\beta_1^t)`, :math:`\hat v = v / (1-\beta_2^t)`.
"""

from __future__ import annotations

import numpy as np

from .._checks import (
    InputError,
    as_float_array,
    check_finite,
    check_int,
    check_real,
    check_shape,
    check_sizes,
)

__all__ = ["MLP", "Adam", "log_softmax", "softmax"]

#: Adam's moments below this (the smallest normal float64) are flushed to zero, here and
#: in the learners' compiled loop.
MOMENT_FLOOR = float(np.finfo(np.float64).tiny)


def softmax(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax :math:`p_o = e^{\\ell_o - m} / \\sum_{o'} e^{\\ell_{o'} - m}`.

    With :math:`m = \\max_o \\ell_o`.
    """
    z = np.asarray(logits, dtype=np.float64)
    z = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable :math:`\\ell_o - \\log \\sum_{o'} e^{\\ell_{o'}}`."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - np.max(z, axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def _rng(seed) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def _positive_int(value, name: str) -> int:
    return check_int(value, name, 1)


class MLP:
    """One hidden ReLU layer and a linear output (logits), with a softmax head.

    Parameters
    ----------
    n_inputs : int
        Input width F.
    n_outputs : int
        Number of logits O (actions for a policy, outcomes for an adversary).
    hidden : int
        Hidden width H (100 in the paper).
    seed : int or numpy.random.Generator, optional
        Seed of the initialisation: same seed, same bits.
    bias_scale : float
        Biases are drawn from U(-bias_scale, bias_scale) (see the module notes on
        ReLU kinks); 0 gives the zero biases of Keras.

    Notes
    -----
    Weights are Glorot-uniform: :math:`W \\sim U(-a, a)`, :math:`a = \\sqrt{6 / (\\text{fan-in}
    + \\text{fan-out})}`.  The number of parameters is :math:`FH + H + HO + O`.
    """

    def __init__(self, n_inputs: int, n_outputs: int, hidden: int = 100, seed=None,
                 bias_scale: float = 0.1):
        self.n_inputs = _positive_int(n_inputs, "n_inputs")
        self.n_outputs = _positive_int(n_outputs, "n_outputs")
        self.hidden = _positive_int(hidden, "hidden")
        F, H, O = self.n_inputs, self.hidden, self.n_outputs
        check_sizes(8 * self.count_params(F, O, H),
                    {"n_inputs": F, "n_outputs": O, "hidden": H}, "network parameters")
        self.shapes = {"W1": (F, H), "b1": (H,), "W2": (H, O), "b2": (O,)}
        sizes = [int(np.prod(s)) for s in self.shapes.values()]
        self._offsets = dict(zip(self.shapes, np.cumsum([0, *sizes[:-1]]).tolist(), strict=True))
        self.n_params = int(sum(sizes))
        self.params = self.init(seed, bias_scale=bias_scale)

    @staticmethod
    def count_params(n_inputs: int, n_outputs: int, hidden: int) -> int:
        """Number of parameters :math:`FH + H + HO + O` (each width an int >= 1)."""
        n_inputs, n_outputs, hidden = (_positive_int(v, k) for k, v in (
            ("n_inputs", n_inputs), ("n_outputs", n_outputs), ("hidden", hidden)))
        return n_inputs * hidden + hidden + hidden * n_outputs + n_outputs

    @staticmethod
    def hidden_from_count(n_params: int, n_inputs: int, n_outputs: int) -> int | None:
        """The hidden width H with :math:`H(F + 1 + O) + O = n`, or None if there is none
        (``n_params`` an int >= 0, the widths ints >= 1)."""
        n_params = check_int(n_params, "n_params", 0)
        n_inputs = _positive_int(n_inputs, "n_inputs")
        n_outputs = _positive_int(n_outputs, "n_outputs")
        num = n_params - n_outputs
        den = n_inputs + 1 + n_outputs
        if num <= 0 or num % den:
            return None
        return num // den

    def __repr__(self) -> str:
        return (f"MLP(n_inputs={self.n_inputs}, hidden={self.hidden}, "
                f"n_outputs={self.n_outputs}, n_params={self.n_params})")

    # ------------------------------------------------------------ parameters
    def init(self, seed=None, bias_scale: float = 0.1) -> np.ndarray:
        """A fresh seeded flat parameter vector (Glorot-uniform weights, small biases)."""
        bias_scale = check_real(bias_scale, "bias_scale", 0.0, 1e300,  # (-0.0 read as 0)
                   hint=" (biases ~ U(-bias_scale, bias_scale), whose width must be finite)")
        rng = _rng(seed)
        F, H, O = self.n_inputs, self.hidden, self.n_outputs
        a1 = np.sqrt(6.0 / (F + H))
        a2 = np.sqrt(6.0 / (H + O))
        parts = [
            rng.uniform(-a1, a1, size=(F, H)),
            rng.uniform(-bias_scale, bias_scale, size=H),
            rng.uniform(-a2, a2, size=(H, O)),
            rng.uniform(-bias_scale, bias_scale, size=O),
        ]
        return np.concatenate([p.ravel() for p in parts]).astype(np.float64)

    def _check_params(self, params) -> np.ndarray:
        if params is None:
            return self.params
        arr = as_float_array(params, "MLP parameters", "give a flat float vector",
                             finite=False)
        if arr.shape != (self.n_params,):
            raise InputError(
                f"MLP parameters must be a flat vector of length {self.n_params} "
                f"(F={self.n_inputs}, H={self.hidden}, O={self.n_outputs}), got shape "
                f"{arr.shape}; use mlp.get_params() for the layout W1, b1, W2, b2"
            )
        return arr

    def unflatten(self, params=None) -> dict:
        """Views ``{"W1", "b1", "W2", "b2"}`` into a flat parameter vector."""
        p = self._check_params(params)
        out = {}
        for name, shape in self.shapes.items():
            start = self._offsets[name]
            out[name] = p[start:start + int(np.prod(shape))].reshape(shape)
        return out

    @staticmethod
    def flatten(W1, b1, W2, b2) -> np.ndarray:
        """The flat vector of the four arrays, in the order W1, b1, W2, b2."""
        return np.concatenate([np.ravel(W1), np.ravel(b1), np.ravel(W2), np.ravel(b2)]).astype(
            np.float64)

    def get_params(self) -> np.ndarray:
        """A copy of the flat parameter vector."""
        return self.params.copy()

    def set_params(self, params) -> None:
        """Replace the parameters by a flat vector of length :attr:`n_params` (copied)."""
        self.params = self._check_params(params).copy()

    @property
    def W1(self) -> np.ndarray:
        return self.unflatten()["W1"]

    @property
    def b1(self) -> np.ndarray:
        return self.unflatten()["b1"]

    @property
    def W2(self) -> np.ndarray:
        return self.unflatten()["W2"]

    @property
    def b2(self) -> np.ndarray:
        return self.unflatten()["b2"]

    # ------------------------------------------------------------ forward
    def _check_x(self, x) -> np.ndarray:
        arr = np.asarray(x, dtype=np.float64)
        if arr.ndim == 1 and self.n_inputs == 1:
            arr = arr[:, None]
        if arr.ndim != 2 or arr.shape[1] != self.n_inputs:
            raise InputError(
                f"MLP input must have shape (N, {self.n_inputs}) (one row per sample), "
                f"got {arr.shape}"
            )
        return arr

    def forward(self, x, params=None) -> dict:
        """Forward pass; returns the cache ``{"x", "z", "h", "logits"}``."""
        w = self.unflatten(params)
        x = self._check_x(x)
        z = x @ w["W1"] + w["b1"]
        h = np.maximum(z, 0.0)
        logits = h @ w["W2"] + w["b2"]
        return {"x": x, "z": z, "h": h, "logits": logits}

    def logits(self, x, params=None) -> np.ndarray:
        """Logits (N, O)."""
        return self.forward(x, params)["logits"]

    def probs(self, x, params=None) -> np.ndarray:
        """Softmax probabilities (N, O)."""
        return softmax(self.logits(x, params))

    def log_probs(self, x, params=None) -> np.ndarray:
        """Log-softmax (N, O)."""
        return log_softmax(self.logits(x, params))

    def relu_margin(self, x, params=None) -> float:
        """Smallest :math:`|z|` over the batch: the distance of the inputs to a ReLU kink."""
        return float(np.abs(self.forward(x, params)["z"]).min())

    def kink_free_step(self, x, params=None) -> np.ndarray:
        r"""Per parameter and direction, the largest move that flips no ReLU.

        The pre-activations :math:`z = x W_1 + b_1` are linear in each single parameter:
        changing :math:`W_1[f, j]` by h moves :math:`z[n, j]` by :math:`h\,x[n, f]`, and
        :math:`b_1[j]` moves it by h; ``W2`` and ``b2`` do not touch z (infinite bound).
        A move of size h up (column 0) or down (column 1) keeps every unit on its side
        of the kink when it is smaller than the bound.  Returns (n_params, 2).
        """
        cache = self.forward(x, params)
        z = cache["z"][:, None, :]  # (N, 1, H)
        xx = cache["x"][:, :, None]  # (N, F, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            dist = np.abs(z) / np.abs(xx)  # (N, F, H)
        # moving W1[f, j] up moves z[n, j] by +h x[n, f]: it reaches 0 if z * x < 0
        up = np.where((z * xx < 0), dist, np.inf).min(axis=0, initial=np.inf)
        down = np.where((z * xx > 0), dist, np.inf).min(axis=0, initial=np.inf)
        zb = cache["z"]
        b_up = np.where(zb < 0, -zb, np.inf).min(axis=0, initial=np.inf)
        b_down = np.where(zb > 0, zb, np.inf).min(axis=0, initial=np.inf)
        # a unit exactly at its kink cannot move either way
        at_kink = (zb == 0).any(axis=0)
        b_up[at_kink] = 0.0
        b_down[at_kink] = 0.0
        w_kink = ((cache["z"][:, None, :] == 0) & (xx != 0)).any(axis=0)
        up[w_kink] = 0.0
        down[w_kink] = 0.0
        rest = np.full(self.hidden * self.n_outputs + self.n_outputs, np.inf)
        return np.stack([
            np.concatenate([up.ravel(), b_up, rest]),
            np.concatenate([down.ravel(), b_down, rest]),
        ], axis=1)

    # ------------------------------------------------------------ backward
    def backward(self, x, grad_logits, params=None, cache=None) -> np.ndarray:
        """Vector-Jacobian product: the flat gradient of ``sum(grad_logits * logits)``.

        Parameters
        ----------
        x : array (N, F)
        grad_logits : array (N, O)
            Cotangent :math:`\\partial f/\\partial \\ell` of a scalar f.
        params : array (n_params,), optional
        cache : dict, optional
            The result of :meth:`forward` at the same ``x`` and ``params``.
        """
        w = self.unflatten(params)
        if cache is None:
            cache = self.forward(x, params)
        g = np.asarray(grad_logits, dtype=np.float64)
        N = cache["x"].shape[0]
        check_shape(g, (N, self.n_outputs), "grad_logits", ("n", "o"))
        dW2 = cache["h"].T @ g
        db2 = g.sum(axis=0)
        delta = (g @ w["W2"].T) * (cache["z"] > 0)
        dW1 = cache["x"].T @ delta
        db1 = delta.sum(axis=0)
        return self.flatten(dW1, db1, dW2, db2)

    def vjp_probs(self, x, grad_probs, params=None) -> np.ndarray:
        """Flat gradient of ``sum(grad_probs * softmax(logits))``.

        The softmax VJP is :math:`g = p \\odot (G - \\sum_o p_o G_o)`.
        """
        cache = self.forward(x, params)
        p = softmax(cache["logits"])
        G = np.asarray(grad_probs, dtype=np.float64)
        check_shape(G, p.shape, "grad_probs", ("n", "o"))
        g = p * (G - (p * G).sum(axis=1, keepdims=True))
        return self.backward(x, g, params, cache)

    def grad_log_softmax(self, x, y, params=None) -> np.ndarray:
        """Per-sample gradients :math:`\\nabla \\log p(y_n \\mid x_n)`, shape (N, n_params).

        One sample (N = 1) takes the fast path of :meth:`grad_log_prob`.
        """
        xa = np.asarray(x, dtype=np.float64)
        ya = np.asarray(y)
        if xa.shape == (1, self.n_inputs) and ya.shape == (1,) \
                and np.issubdtype(ya.dtype, np.integer) and 0 <= ya[0] < self.n_outputs:
            return self.grad_log_prob(xa[0], int(ya[0]), self._check_params(params))[None, :]
        cache = self.forward(x, params)
        N = cache["x"].shape[0]
        y = np.asarray(y)
        if y.shape != (N,) or not np.issubdtype(y.dtype, np.integer) \
                or (N and (y.min() < 0 or y.max() >= self.n_outputs)):
            raise InputError(f"y must be an integer array of shape ({N},) of output indices "
                             f"in 0..{self.n_outputs - 1}, got {y.dtype} {y.shape}")
        g = -softmax(cache["logits"])
        g[np.arange(N), y] += 1.0
        return self._per_sample(cache, g[:, None, :], params)[:, 0, :]

    def grad_log_prob(self, x, y: int, params=None) -> np.ndarray:
        r"""Fast single-sample :math:`\nabla_\theta \log p(y \mid x)`, shape (n_params,).

        The forward and backward pass of one input row ``x`` (F,) in plain numpy:
        :math:`g = e_y - p`, :math:`\delta = (W_2 g) \odot [z > 0]`, gradient
        :math:`(x \delta^\top, \delta, h g^\top, g)` in the flat layout.  No input
        checks beyond the parameter vector's length (the per-step path of a learner).
        """
        p = self.params if params is None else params
        F, H, O = self.n_inputs, self.hidden, self.n_outputs
        o1, o2, o3 = F * H, F * H + H, F * H + H + H * O
        W2 = p[o2:o3].reshape(H, O)
        z = np.asarray(x, dtype=np.float64) @ p[:o1].reshape(F, H) + p[o1:o2]
        h = np.maximum(z, 0.0)
        logits = h @ W2 + p[o3:]
        e = np.exp(logits - logits.max())
        g = e / -e.sum()
        g[y] += 1.0
        delta = (W2 @ g) * (z > 0)
        out = np.empty(self.n_params)
        out[:o1] = np.multiply.outer(x, delta).ravel()
        out[o1:o2] = delta
        out[o2:o3] = np.multiply.outer(h, g).ravel()
        out[o3:] = g
        return out

    def score(self, x, params=None) -> np.ndarray:
        """:math:`\\nabla \\log p(o \\mid x_n)` for every output o: shape (N, O, n_params)."""
        cache = self.forward(x, params)
        p = softmax(cache["logits"])
        g = np.eye(self.n_outputs)[None, :, :] - p[:, None, :]  # (N, O_choice, O_logit)
        return self._per_sample(cache, g, params)

    def jacobian_probs(self, x, params=None) -> np.ndarray:
        """:math:`\\partial p(o \\mid x_n) / \\partial \\theta` (N, O, n_params) = p * score."""
        p = self.probs(x, params)
        return p[:, :, None] * self.score(x, params)

    def _per_sample(self, cache, g, params) -> np.ndarray:
        """Per-sample, per-row gradients for logit cotangents ``g`` (N, M, O) -> (N, M, n)."""
        w = self.unflatten(params)
        x, h, z = cache["x"], cache["h"], cache["z"]
        N, M, _ = g.shape
        dW2 = np.einsum("nh,nmo->nmho", h, g)
        delta = np.einsum("nmo,ho->nmh", g, w["W2"]) * (z > 0)[:, None, :]
        dW1 = np.einsum("nf,nmh->nmfh", x, delta)
        return np.concatenate(
            [dW1.reshape(N, M, -1), delta, dW2.reshape(N, M, -1), g], axis=2
        )


class Adam:
    """The Adam optimiser on a flat parameter vector (descent; pass ``-grad`` to ascend).

    Parameters
    ----------
    n_params : int
        Length of the parameter vector.
    lr : float
        Step size :math:`\\eta` (the paper: 0.001 for the policy and the adversary).
    beta1, beta2, eps : float
        Adam's constants (defaults of Kingma and Ba).

    Examples
    --------
    >>> opt = Adam(1, lr=0.1)
    >>> opt.step(np.array([1.0]), np.array([4.0]))  # first step moves by lr * sign(g)
    array([0.9])
    """

    def __init__(self, n_params: int, lr: float = 1e-3, beta1: float = 0.9,
                 beta2: float = 0.999, eps: float = 1e-8):
        self.n_params = _positive_int(n_params, "n_params")
        check_sizes(16 * self.n_params, {"n_params": self.n_params}, "Adam's two moments")
        check_real(lr, "lr", 0.0, low_open=True)
        check_real(beta1, "beta1", 0.0, 1.0, high_open=True)
        check_real(beta2, "beta2", 0.0, 1.0, high_open=True)
        check_real(eps, "eps", 0.0, low_open=True)
        self.lr = float(lr)
        self.beta1 = float(beta1)
        self.beta2 = float(beta2)
        self.eps = float(eps)
        self.m = np.zeros(self.n_params)
        self.v = np.zeros(self.n_params)
        self.t = 0

    def step(self, params, grad, lr: float | None = None) -> np.ndarray:
        """One descent step; returns the new parameters (``params`` is not modified).

        ``lr`` overrides the step size for this step (for a learning-rate schedule).
        """
        p = np.asarray(params, dtype=np.float64)
        g = np.asarray(grad, dtype=np.float64)
        check_shape(p, (self.n_params,), "Adam params")
        check_shape(g, (self.n_params,), "Adam grad")
        check_finite(g, "gradient")
        self.t += 1
        self.m = self.beta1 * self.m + (1.0 - self.beta1) * g
        self.v = self.beta2 * self.v + (1.0 - self.beta2) * g * g
        # flush moments below the smallest normal float to zero: a gradient that stays 0
        # would leave a subnormal moment forever (0.9 times the smallest subnormal rounds
        # back to it), and subnormal arithmetic is many times slower on some CPUs
        self.m[np.abs(self.m) < MOMENT_FLOOR] = 0.0
        self.v[self.v < MOMENT_FLOOR] = 0.0
        m_hat = self.m / (1.0 - self.beta1**self.t)
        v_hat = self.v / (1.0 - self.beta2**self.t)
        eta = self.lr if lr is None else float(lr)
        return p - eta * m_hat / (np.sqrt(v_hat) + self.eps)

    def state_dict(self) -> dict:
        """The optimiser state as arrays (for ``numpy.savez``)."""
        return {
            "m": self.m.copy(),
            "v": self.v.copy(),
            "t": np.array(self.t),
            "hyper": np.array([self.lr, self.beta1, self.beta2, self.eps]),
        }

    def load_state_dict(self, state) -> None:
        """Restore a state saved by :meth:`state_dict`."""
        m = np.asarray(state["m"], dtype=np.float64)
        v = np.asarray(state["v"], dtype=np.float64)
        check_shape(m, (self.n_params,), "optimiser state m")
        check_shape(v, (self.n_params,), "optimiser state v")
        self.m, self.v = m.copy(), v.copy()
        self.t = int(state["t"])
        self.lr, self.beta1, self.beta2, self.eps = (float(h) for h in state["hyper"])
