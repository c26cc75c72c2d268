//! Hessian-vector products (`f_hvp`, forward over reverse: the gradient run on dual numbers)
//! against the gradient of the same function; `hvp_jax.py` measures JAX's
//! `jax.jvp(jax.grad(loss))`.
//!
//! - `w1_hvp`: the W1 MLP's loss (batch 64, 784 → 256 → 10, `f32`), its HVP in every
//!   parameter along a direction of each;
//! - `w1_grad`: the same loss's gradient, what an HVP is measured against (JAX's and
//!   PyTorch's HVPs cost 2–4 gradients);
//! - `kmeans_hvp`: GradBench's kmeans cost (`Σᵢ minⱼ ‖Pᵢ − Cⱼ‖²`, 1000 points, 10 centroids of
//!   8 dimensions, `f64`), the HVP its `dir` answer takes.
//!
//! `cargo bench -p rune-benches --bench hvp`, then `python3 benches/hvp_jax.py` (both pinned
//! with `taskset -c 1`).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use rune_ad::prelude::*;

/// The W1 loss, generic over the element type so that `mlp_hvp` exists.
#[differentiable]
fn mlp<T: Element>(
    w1: &Tensor<T>,
    b1: &Tensor<T>,
    w2: &Tensor<T>,
    b2: &Tensor<T>,
    #[nodiff] x: &Tensor<T>,
    #[nodiff] y: &Tensor<T>,
) -> Tensor<T> {
    let h = (x.matmul(w1) + b1).tanh();
    let d = h.matmul(w2) + b2 - y;
    (&d * &d).mean()
}

/// kmeans' cost: the squared distance of each point to its nearest centroid, summed.
#[differentiable]
fn kmeans<T: Element>(c: &Tensor<T>, #[nodiff] p: &Tensor<T>) -> Tensor<T> {
    let cross = p.matmul(&c.t());
    let d = p.square().sum_axes(&[1], true) - cross * T::from_f64(2.0)
        + c.square().sum_axes(&[1], false);
    d.min_axes(&[1], false).sum()
}

fn hvp(c: &mut Criterion) {
    let w1 = Tensor::<f32>::rand_uniform(&[784, 256], -0.05, 0.05, 12);
    let b1 = Tensor::<f32>::rand_uniform(&[256], -0.1, 0.1, 13);
    let w2 = Tensor::<f32>::rand_uniform(&[256, 10], -0.0625, 0.0625, 14);
    let b2 = Tensor::<f32>::rand_uniform(&[10], -0.1, 0.1, 15);
    let x = Tensor::<f32>::rand_uniform(&[64, 784], 0.0, 1.0, 11);
    let y = Tensor::<f32>::rand_uniform(&[64, 10], 0.0, 1.0, 16);
    let v1 = Tensor::<f32>::rand_uniform(&[784, 256], -1.0, 1.0, 17);
    let vb1 = Tensor::<f32>::rand_uniform(&[256], -1.0, 1.0, 18);
    let v2 = Tensor::<f32>::rand_uniform(&[256, 10], -1.0, 1.0, 19);
    let vb2 = Tensor::<f32>::rand_uniform(&[10], -1.0, 1.0, 20);
    let centroids = Tensor::<f64>::rand_uniform(&[10, 8], 0.0, 1.0, 21);
    let points = Tensor::<f64>::rand_uniform(&[1000, 8], 0.0, 1.0, 22);
    let ones = Tensor::<f64>::ones(&[10, 8]);
    let mut group = c.benchmark_group("hvp");
    group.sample_size(20);
    group.bench_function("w1_hvp", |b| {
        b.iter(|| mlp_hvp(&w1, &b1, &w2, &b2, black_box(&x), &y, &v1, &vb1, &v2, &vb2))
    });
    group.bench_function("w1_grad", |b| {
        b.iter(|| mlp_grad(&w1, &b1, &w2, &b2, black_box(&x), &y))
    });
    group.bench_function("kmeans_hvp", |b| {
        b.iter(|| kmeans_hvp(black_box(&centroids), &points, &ones))
    });
    group.finish();
}

criterion_group!(benches, hvp);
criterion_main!(benches);
