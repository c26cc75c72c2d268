"""JAX's figures for benches/vmap.rs: the same functions at the same shapes, on one core.

Run pinned beside the Rust bench: `taskset -c 1 python3 benches/vmap_jax.py`. It prints the
median of each entry in milliseconds, and, when criterion's estimates of the last
`cargo bench -p rune-benches --bench vmap` run are there, rune-ad's beside them.
"""

import json
import os
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


def loss(w1, b1, w2, b2, x, y):
    h = jnp.tanh(x @ w1 + b1)
    d = h @ w2 + b2 - y
    return jnp.sum(d * d)


def field(x, a):
    return jnp.tanh(a @ x) * x


def median_ms(f, *args, reps=30):
    jax.block_until_ready(f(*args))
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))


def main():
    rng = np.random.default_rng(0)
    f32 = np.float32
    w1 = jnp.asarray(rng.uniform(-0.05, 0.05, (784, 256)), f32)
    b1 = jnp.asarray(rng.uniform(-0.1, 0.1, (256,)), f32)
    w2 = jnp.asarray(rng.uniform(-0.0625, 0.0625, (256, 10)), f32)
    b2 = jnp.asarray(rng.uniform(-0.1, 0.1, (10,)), f32)
    xs = jnp.asarray(rng.uniform(0, 1, (64, 784)), f32)
    ys = jnp.asarray(rng.uniform(0, 1, (64, 10)), f32)
    per_example = jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1, 2, 3)), in_axes=(None,) * 4 + (0, 0)))
    batch = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))
    a = jnp.asarray(rng.uniform(-0.1, 0.1, (100, 100)))
    x = jnp.asarray(rng.uniform(-1, 1, (100,)))
    jac = jax.jit(jax.jacrev(field))
    jax_ms = {
        "w1_per_example_vmap": median_ms(per_example, w1, b1, w2, b2, xs, ys),
        "w1_batch_grad": median_ms(batch, w1, b1, w2, b2, xs, ys),
        "jacrev100_vmap": median_ms(jac, x, a),
    }
    here = os.path.dirname(os.path.abspath(__file__))
    target = os.path.join(here, "..", "target", "criterion", "vmap")
    print(f"{'entry':24} {'rune-ad ms':>11} {'JAX ms':>9} {'ratio':>7}")
    for name in ["w1_per_example_vmap", "w1_per_example_loop", "w1_batch_grad", "jacrev100_vmap", "jacrev100_loop"]:
        ours = None
        path = os.path.join(target, name, "new", "estimates.json")
        if os.path.exists(path):
            with open(path) as f:
                ours = json.load(f)["median"]["point_estimate"] / 1e6
        theirs = jax_ms.get(name)
        ratio = f"{ours / theirs:7.2f}" if ours and theirs else ""
        print(f"{name:24} {ours if ours is not None else float('nan'):11.3f} "
              f"{theirs if theirs is not None else float('nan'):9.3f} {ratio}")


if __name__ == "__main__":
    main()
