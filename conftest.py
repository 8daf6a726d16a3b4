"""Repository-wide pytest setup: the environment nbval's notebook kernels inherit.

Lives at the root (not in tests/) so that `pytest notebooks/` alone gets it too. The values
match the site build's kernels (site_hooks/nb_execute.py): headless matplotlib, reproducible
hashing, 2 threads per kernel on 2-core machines.
"""

import os

for _name, _value in {
    "MPLBACKEND": "Agg",
    "PYTHONHASHSEED": "0",
    "OMP_NUM_THREADS": "2",
    "MKL_NUM_THREADS": "2",
}.items():
    os.environ.setdefault(_name, _value)
