"""JAX's figures for benches/hvp.rs: the same functions at the same shapes, on one core.

Run pinned beside the Rust bench: `taskset -c 1 python3 benches/hvp_jax.py`. It prints the
median of each entry in milliseconds, and, when criterion's estimates of the last
`cargo bench -p rune-benches --bench hvp` run are there, rune-ad's beside them. JAX's HVP is
forward over reverse, `jax.jvp(jax.grad(f), (params,), (directions,))`, jitted.
"""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import jax
import jax.numpy as jnp
import numpy as np
from jax_side_by_side import median_ms, print_side_by_side

jax.config.update("jax_enable_x64", True)


def mlp(params, x, y):
    w1, b1, w2, b2 = params
    h = jnp.tanh(x @ w1 + b1)
    d = h @ w2 + b2 - y
    return jnp.mean(d * d)


def kmeans(c, p):
    d = jnp.sum(p * p, axis=1, keepdims=True) - 2.0 * (p @ c.T) + jnp.sum(c * c, axis=1)
    return jnp.sum(jnp.min(d, axis=1))


def main():
    rng = np.random.default_rng(0)
    f32 = np.float32
    params = (
        jnp.asarray(rng.uniform(-0.05, 0.05, (784, 256)), f32),
        jnp.asarray(rng.uniform(-0.1, 0.1, (256,)), f32),
        jnp.asarray(rng.uniform(-0.0625, 0.0625, (256, 10)), f32),
        jnp.asarray(rng.uniform(-0.1, 0.1, (10,)), f32),
    )
    dirs = tuple(jnp.asarray(rng.uniform(-1, 1, p.shape), f32) for p in params)
    x = jnp.asarray(rng.uniform(0, 1, (64, 784)), f32)
    y = jnp.asarray(rng.uniform(0, 1, (64, 10)), f32)
    mlp_hvp = jax.jit(lambda p, v, x, y: jax.jvp(lambda q: jax.grad(mlp)(q, x, y), (p,), (v,)))
    mlp_grad = jax.jit(jax.grad(mlp))
    c = jnp.asarray(rng.uniform(0, 1, (10, 8)))
    pts = jnp.asarray(rng.uniform(0, 1, (1000, 8)))
    ones = jnp.ones((10, 8))
    km_hvp = jax.jit(lambda c, v, p: jax.jvp(lambda d: jax.grad(kmeans)(d, p), (c,), (v,)))
    jax_ms = {
        "w1_hvp": median_ms(mlp_hvp, params, dirs, x, y),
        "w1_grad": median_ms(mlp_grad, params, x, y),
        "kmeans_hvp": median_ms(km_hvp, c, ones, pts),
    }
    print_side_by_side("hvp", ["w1_hvp", "w1_grad", "kmeans_hvp"], jax_ms)

if __name__ == "__main__":
    main()
