"""Time and peak memory of the model builders: Garnet (dense and sparse draws) and the
Gymnasium toy-text conversions.

Every case runs in a fresh Python process, which reports

* ``time``: the median wall time of ``--repeats`` builds (after one warm-up build);
* ``traced``: the peak of the memory that Python and numpy allocate during one build
  (``tracemalloc``, which numpy reports its arrays to);
* ``rss``: the process's peak resident set size (``ru_maxrss``, interpreter and imports
  included, about 100 MB of it before any model is built).

Garnet cases: ``garnet(S, 4, 3)`` in the automatic mode (the dense permutation draw up to
S*A*S = 2**24 entries, the sparse O(S A b) draw above) and with ``sparse=True`` at the
same sizes, side by side with the ratio dense / sparse; ``garnet(20000, 4, 3)`` and
``garnet(100000, 4, 3)`` in the automatic (sparse) mode, whose dense draw would need
8*S*A*S bytes for its random keys alone (printed as ``dense keys``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, statistics, sys, time, tracemalloc, warnings
warnings.simplefilter("ignore")
from rcmdp_exact import TabularCMDP
from rcmdp_exact.domains import garnet
kind, arg, repeats = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
if kind == "garnet":
    build = lambda: garnet(*arg["args"], seed=0, **arg.get("kw", {}))
else:
    import gymnasium
    env = gymnasium.make(arg["id"], **arg.get("kw", {}))
    build = lambda: TabularCMDP.from_gymnasium(env)
model = build()
times = []
for _ in range(repeats):
    t = time.perf_counter()
    build()
    times.append(time.perf_counter() - t)
del model
tracemalloc.start()
model = build()
traced = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps({"time": statistics.median(times), "traced": traced,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "model": repr(model)}))
"""


def run(kind: str, arg: dict, repeats: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, kind, json.dumps(arg), str(repeats)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def mb(x: float) -> str:
    return f"{x / 2**20:8.1f} MB"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="also write the numbers to this file")
    args = ap.parse_args(argv)
    results: dict = {"garnet_side_by_side": [], "garnet_large": [], "gymnasium": []}

    print("garnet(S, 4, 3): automatic mode vs sparse=True (time, tracemalloc peak)")
    print(f"{'S':>7} {'mode':>6} {'auto time':>10} {'auto traced':>12} {'sparse time':>12} "
          f"{'sparse traced':>14} {'x time':>7} {'x mem':>6}")
    for S in (256, 1024, 2048):
        auto = run("garnet", {"args": [S, 4, 3]}, args.repeats)
        sparse = run("garnet", {"args": [S, 4, 3], "kw": {"sparse": True}}, args.repeats)
        mode = "sparse" if "sparse" in auto["model"] else "dense"
        print(f"{S:>7} {mode:>6} {auto['time'] * 1e3:8.1f}ms {mb(auto['traced']):>12} "
              f"{sparse['time'] * 1e3:10.1f}ms {mb(sparse['traced']):>14} "
              f"{auto['time'] / sparse['time']:6.0f}x "
              f"{auto['traced'] / sparse['traced']:5.0f}x")
        results["garnet_side_by_side"].append({"S": S, "auto": auto, "sparse": sparse})

    print("\ngarnet(S, 4, 3), automatic mode (sparse above 2**24 entries)")
    print(f"{'S':>7} {'time':>9} {'traced':>11} {'peak RSS':>11} {'dense keys':>12}")
    for S in (20000, 100000):
        res = run("garnet", {"args": [S, 4, 3]}, args.repeats)
        keys = 8 * S * 4 * S
        print(f"{S:>7} {res['time']:8.2f}s {mb(res['traced'])} {mb(res['rss'])} "
              f"{keys / 2**30:9.1f} GB")
        results["garnet_large"].append({"S": S, **res})

    print("\nTabularCMDP.from_gymnasium")
    print(f"{'environment':>28} {'time':>9} {'traced':>11}")
    for env_id, kw in (("FrozenLake-v1", {}), ("FrozenLake8x8-v1", {}),
                       ("CliffWalking-v1", {}), ("Taxi-v4", {}),
                       ("Taxi-v4", {"is_rainy": True})):
        res = run("gym", {"id": env_id, "kw": kw}, args.repeats)
        label = env_id + (" (rainy)" if kw else "")
        print(f"{label:>28} {res['time'] * 1e3:7.1f}ms {mb(res['traced'])}")
        results["gymnasium"].append({"id": label, **res})

    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return results


if __name__ == "__main__":
    main()
