"""A short tour of the parsa package (run from the repository's root):

    make python
    PYTHONPATH=python /usr/bin/python3 python/examples/tutorial.py [out.png]

1. Partition a scipy.sparse matrix (rows = examples, columns = features)
   into k parts for k machines: examples to workers, features to servers.
2. Compare with the random placement (every run measures it too) and
   with method="random" itself.
3. Place new examples against the finished placement (parsa.assign).
4. Plot M_i (parameters worker i needs) and T_i (traffic of machine i)
   per part, for Parsa and for random, when matplotlib is installed.
"""
import sys

import numpy as np
import scipy.sparse as sp

import parsa

# A matrix with structure: 20000 examples in 40 topics; each example
# draws 12 features, most of them from its topic's 300-feature vocabulary.
rng = np.random.default_rng(0)
n, m, topics, d = 20000, 12000, 40, 12
topic = rng.integers(0, topics, n)
local = topic[:, None] * 300 + rng.integers(0, 300, (n, d))
noise = rng.integers(0, m, (n, d))
cols = np.where(rng.random((n, d)) < 0.8, local, noise).reshape(-1)
X = sp.csr_matrix((np.ones(n * d, np.float32), cols, np.arange(0, n * d + 1, d)),
                  shape=(n, m))

k = 8
pl = parsa.partition(X, k, seed=1, progress=lambda f, phase: print(
    "\r%-12s %3.0f%%" % (phase, 100 * f), end="" if f < 1 else "\n"))
rnd = parsa.partition(X, k, seed=1, method="random")
print(pl)
print("%-16s %10s %10s %10s" % ("", "parsa", "random", "baseline"))
for key in ("M_max", "T_max", "T_sum", "RF", "local_fraction"):
    print("%-16s %10.3f %10.3f %10.3f" % (key, pl.metrics[key], rnd.metrics[key],
                                         pl.random_metrics[key]))
print("matrix conversion: %.3f s; partition (report total): %.3f s" %
      (pl.convert_seconds, pl.report["seconds"]["total"]))

# new examples: the first three rows again, and one of unseen features
new = [list(X[i].indices) for i in range(3)] + [[m + 1, m + 2]]
print("assign:", parsa.assign(pl, new), "(the first three were in parts",
      pl.examples[:3], ")")

# the same placement's metrics recomputed from the arrays alone
assert parsa.evaluate(X, pl.examples, pl.features).metrics == pl.metrics

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("(matplotlib is not installed: no plot)")
    sys.exit(0)
fig, ax = plt.subplots(1, 2, figsize=(9, 3.5))
x = np.arange(k)
for i, key in enumerate(("M", "T")):
    ax[i].bar(x - 0.2, pl.report["parts"][key], 0.4, label="parsa")
    ax[i].bar(x + 0.2, pl.report["random_parts"][key], 0.4, label="random")
    ax[i].set_title("%s_i per part" % key)
    ax[i].set_xlabel("part (machine)")
    ax[i].legend()
out = sys.argv[1] if len(sys.argv) > 1 else "parsa-parts.png"
fig.tight_layout()
fig.savefig(out)
print("wrote", out)
