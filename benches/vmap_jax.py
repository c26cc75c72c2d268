"""JAX's figures for benches/vmap.rs: the same functions at the same shapes, on one core.

Run pinned beside the Rust bench: `taskset -c 1 python3 benches/vmap_jax.py`. It prints the
median of each entry in milliseconds, and, when criterion's estimates of the last
`cargo bench -p rune-benches --bench vmap` run are there, rune-ad's beside them.
"""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import jax
import jax.numpy as jnp
import numpy as np
from jax_side_by_side import median_ms, print_side_by_side

jax.config.update("jax_enable_x64", True)


def loss(w1, b1, w2, b2, x, y):
    h = jnp.tanh(x @ w1 + b1)
    d = h @ w2 + b2 - y
    return jnp.sum(d * d)


def field(x, a):
    return jnp.tanh(a @ x) * x


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
    print_side_by_side("vmap", ["w1_per_example_vmap", "w1_per_example_loop", "w1_batch_grad", "jacrev100_vmap", "jacrev100_loop"], jax_ms)

if __name__ == "__main__":
    main()
