"""What the JAX scripts beside the Rust benches share: timing a jitted function on one
thread, and printing its medians beside rune-ad's from criterion's last run."""

import json
import os
import time

import jax
import numpy as np


def median_ms(f, *args, reps=30):
    """The median time of `f(*args)` in milliseconds, after one call that compiles it."""
    jax.block_until_ready(f(*args))
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))


def print_side_by_side(group, names, jax_ms):
    """Each entry of criterion group `group` (its last run's median) beside JAX's."""
    here = os.path.dirname(os.path.abspath(__file__))
    target = os.path.join(here, "..", "target", "criterion", group)
    width = max(len(n) for n in names) + 2
    print(f"{'entry':{width}} {'rune-ad ms':>11} {'JAX ms':>9} {'ratio':>7}")
    for name in names:
        ours = None
        path = os.path.join(target, name, "new", "estimates.json")
        if os.path.exists(path):
            with open(path) as f:
                ours = json.load(f)["median"]["point_estimate"] / 1e6
        theirs = jax_ms.get(name)
        ratio = f"{ours / theirs:7.2f}" if ours and theirs else ""
        print(f"{name:{width}} {ours if ours is not None else float('nan'):11.3f} "
              f"{theirs if theirs is not None else float('nan'):9.3f} {ratio}")
