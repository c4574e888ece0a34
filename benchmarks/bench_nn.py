"""Single-sample MLP gradient: ``MLP.grad_log_softmax`` beside plain numpy.

Times, for one input row of a 100-unit network (the paper's size), the gradient of
:math:`\\log p(y \\mid x)` by

* ``per-sample einsum``: the batched per-sample path (``MLP._per_sample``, what
  ``grad_log_softmax`` ran for every batch size before the fast path);
* ``grad_log_softmax``: the public method (one sample takes the fast path, after
  checking its inputs);
* ``grad_log_prob``: the fast path itself;
* ``plain numpy``: the same forward and backward written inline here, the floor.

Usage: ``python benchmarks/bench_nn.py``
"""

from __future__ import annotations

import timeit

import numpy as np

from rcmdp_exact.core.nn import MLP


def plain(p, x, y, F, H, O):
    o1, o2, o3 = F * H, F * H + H, F * H + H + H * O
    W2 = p[o2:o3].reshape(H, O)
    z = x @ p[:o1].reshape(F, H) + p[o1:o2]
    h = np.maximum(z, 0.0)
    lg = h @ W2 + p[o3:]
    e = np.exp(lg - lg.max())
    g = -e / e.sum()
    g[y] += 1.0
    d = (W2 @ g) * (z > 0)
    return np.concatenate([np.outer(x, d).ravel(), d, np.outer(h, g).ravel(), g])


def row(F: int, O: int) -> list:
    """Microseconds of the four ways for inputs F and outputs O."""
    net = MLP(F, O, hidden=100, seed=0)
    x = np.linspace(0.1, 0.5, F)
    y = 1
    X, Y = x[None, :], np.array([y])
    p = net.params

    def einsum_path():
        cache = net.forward(X)
        g = -np.exp(net.log_probs(X))
        g[0, y] += 1.0
        return net._per_sample(cache, g[:, None, :], None)[:, 0, :]

    ref = plain(p, x, y, F, net.hidden, O)
    assert np.allclose(einsum_path()[0], ref) and np.allclose(net.grad_log_prob(x, y), ref)
    ways = (einsum_path, lambda: net.grad_log_softmax(X, Y),
            lambda: net.grad_log_prob(x, y), lambda: plain(p, x, y, F, net.hidden, O))
    return [min(timeit.repeat(f, number=2000, repeat=7)) / 2000 * 1e6 for f in ways]


def main() -> None:
    print("microseconds per call, one sample, hidden 100 (best of 7 x 2000)")
    print(f"{'F':>3}{'O':>4}{'per-sample einsum':>20}{'grad_log_softmax':>18}"
          f"{'grad_log_prob':>15}{'plain numpy':>13}{'ratio':>7}")
    for F, O in ((1, 10), (2, 4), (3, 5)):
        out = row(F, O)
        print(f"{F:>3}{O:>4}{out[0]:>20.1f}{out[1]:>18.1f}{out[2]:>15.1f}{out[3]:>13.1f}"
              f"{out[1] / out[3]:>7.2f}")


if __name__ == "__main__":
    main()
