//! Batched derivatives (`#[differentiable(vmap)]`) against the ordinary gradient of the same
//! batch and against a loop of one call per example; `vmap_jax.py` measures JAX's.
//!
//! - `w1_per_example_vmap`: the W1 MLP's gradient of each of 64 examples' losses in one call,
//!   `mlp_grad_vmap` (`jax.vmap(jax.grad(loss), in_axes=(None, None, None, None, 0, 0))`);
//! - `w1_per_example_loop`: the same as 64 calls of `mlp_grad`;
//! - `w1_batch_grad`: one gradient of the batch's summed loss (W1's gradient, what the
//!   per-example gradients are measured against);
//! - `jacrev100_vmap`: the Jacobian of a 100 → 100 function as one batched VJP of the rows of
//!   the identity, `jacrev_vmap` (`jax.jacrev`); `jacrev100_loop`: `jacrev`, a loop of 100 VJPs.
//!
//! `cargo bench -p rune-benches --bench vmap`, then `python3 benches/vmap_jax.py` (JAX
//! installed, both pinned with `taskset -c 1`) prints both systems' medians side by side.
//!
//! The bench runs on mimalloc, as a program making per-example gradients should: they are 64
//! copies of W1's parameters (51 MB), which glibc's allocator maps afresh and faults in page by
//! page on every call, 5× the time of the rest (docs/benchmarks.md, "Batched derivatives").

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use rune_ad::prelude::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One example's loss: `x` `[784]`, `y` `[10]`.
#[differentiable(vmap)]
fn mlp(
    w1: &Tensor<f32>,
    b1: &Tensor<f32>,
    w2: &Tensor<f32>,
    b2: &Tensor<f32>,
    #[nodiff] x: &Tensor<f32>,
    #[nodiff] y: &Tensor<f32>,
) -> Tensor<f32> {
    let h = (x.matmul(w1) + b1).tanh();
    let d = h.matmul(w2) + b2 - y;
    (&d * &d).sum()
}

/// A 100 → 100 function.
#[differentiable(vmap)]
fn field(x: &Tensor<f64>, #[nodiff] a: &Tensor<f64>) -> Tensor<f64> {
    a.matmul(x).tanh() * x
}

fn vmap(c: &mut Criterion) {
    let w1 = Tensor::<f32>::rand_uniform(&[784, 256], -0.05, 0.05, 12);
    let b1 = Tensor::<f32>::rand_uniform(&[256], -0.1, 0.1, 13);
    let w2 = Tensor::<f32>::rand_uniform(&[256, 10], -0.0625, 0.0625, 14);
    let b2 = Tensor::<f32>::rand_uniform(&[10], -0.1, 0.1, 15);
    let xs = Tensor::<f32>::rand_uniform(&[64, 784], 0.0, 1.0, 11);
    let ys = Tensor::<f32>::rand_uniform(&[64, 10], 0.0, 1.0, 16);
    let rows: Vec<_> = (0..64)
        .map(|i| {
            let pick = |t: &Tensor<f32>| t.index_select(0, &[i]).squeeze(0);
            (pick(&xs), pick(&ys))
        })
        .collect();
    let mut group = c.benchmark_group("vmap");
    group.sample_size(20);
    group.bench_function("w1_per_example_vmap", |b| {
        b.iter(|| mlp_grad_vmap(&w1, &b1, &w2, &b2, Batch(black_box(&xs)), Batch(&ys)))
    });
    group.bench_function("w1_per_example_loop", |b| {
        b.iter(|| {
            rows.iter()
                .map(|(x, y)| mlp_grad(&w1, &b1, &w2, &b2, black_box(x), y))
                .collect::<Vec<_>>()
        })
    });
    group.bench_function("w1_batch_grad", |b| {
        b.iter(|| mlp_grad(&w1, &b1, &w2, &b2, black_box(&xs), &ys))
    });
    let a = Tensor::<f64>::rand_uniform(&[100, 100], -0.1, 0.1, 21);
    let x = Tensor::<f64>::rand_uniform(&[100], -1.0, 1.0, 22);
    group.bench_function("jacrev100_vmap", |b| {
        b.iter(|| {
            jacrev_vmap(
                |x, ws| field_vjp_vmap(x, &a, Batch(ws)).1,
                black_box(&x),
                &[100],
            )
        })
    });
    group.bench_function("jacrev100_loop", |b| {
        b.iter(|| jacrev(|x, ct| field_vjp(x, &a, ct).1, black_box(&x), &[100]))
    });
    group.finish();
}

criterion_group!(benches, vmap);
criterion_main!(benches);
