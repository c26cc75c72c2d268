"""JAX beside `benches/indexing.rs`: the same gathers and gradients, jitted, on one core.

    taskset -c 0 python benches/indexing_jax.py

Median of 50 calls each (after compiling), in microseconds, blocking on each result.
"""
import os
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


def median_us(f, *args, reps=50):
    jax.block_until_ready(f(*args))
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e6


n, m = 100_000, 400_000
x = jnp.asarray(np.random.default_rng(1).normal(size=n))
idx = jnp.asarray((np.arange(m) * 7919) % n)
w = jnp.asarray(np.random.default_rng(2).normal(size=m))
gather = jax.jit(lambda x, i: jnp.take(x, i))
gather_grad = jax.jit(jax.grad(lambda x, i, w: jnp.sum(jnp.take(x, i) * w)))

rows, dim, ids = 10_000, 64, 20_000
table = jnp.asarray(np.random.default_rng(3).normal(size=(rows, dim)))
ids_ = jnp.asarray((np.arange(ids) * 7919) % rows)
wr = jnp.asarray(np.random.default_rng(4).normal(size=(ids, dim)))
emb = jax.jit(lambda t, i: jnp.take(t, i, axis=0))
emb_grad = jax.jit(jax.grad(lambda t, i, w: jnp.sum(jnp.take(t, i, axis=0) * w)))

print(f"gather {median_us(gather, x, idx):.0f} us")
print(f"gather_grad {median_us(gather_grad, x, idx, w):.0f} us")
print(f"embedding {median_us(emb, table, ids_):.0f} us")
print(f"embedding_grad {median_us(emb_grad, table, ids_, wr):.0f} us")
