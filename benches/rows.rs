//! A row-wise reduction ending a fused region: the mean over the last axis of an elementwise
//! tree of an `f32` `[512, 1024]` tensor and a broadcast row, written three ways and timed in
//! the same run: fused with the reduction (`mean_axes` in the region's pass, the default), with
//! the region ending before the reduction (a constant reading the tree's value keeps it out of
//! the region, as every `sum_axes` and `mean_axes` was before they could end one), and
//! `fuse = false`. Before timing, the bench checks that the three agree.
//!
//! `cargo bench -p rune-benches --bench rows -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use rune_ad::prelude::*;

#[differentiable]
fn rows(x: &Tensor<f32>, w: &Tensor<f32>) -> Tensor<f32> {
    ((x * w).tanh() * x + 1.0)
        .ln()
        .mean_axes(&[-1], false)
        .sum()
}

#[differentiable]
fn rows_split(x: &Tensor<f32>, w: &Tensor<f32>) -> Tensor<f32> {
    let y = ((x * w).tanh() * x + 1.0).ln();
    let _rank = y.shape().len();
    y.mean_axes(&[-1], false).sum()
}

#[differentiable(fuse = false)]
fn rows_unfused(x: &Tensor<f32>, w: &Tensor<f32>) -> Tensor<f32> {
    ((x * w).tanh() * x + 1.0)
        .ln()
        .mean_axes(&[-1], false)
        .sum()
}

fn bench(c: &mut Criterion) {
    let x = Tensor::<f32>::rand_uniform(&[512, 1024], 0.0, 1.0, 1);
    let w = Tensor::<f32>::rand_uniform(&[1024], 0.0, 1.0, 2);
    let (value, (gx, gw)) = rows_value_and_grad(&x, &w);
    for (name, (v, (hx, hw))) in [
        ("split", rows_split_value_and_grad(&x, &w)),
        ("unfused", rows_unfused_value_and_grad(&x, &w)),
    ] {
        assert_eq!(value.item(), v.item(), "{name}: value");
        assert_eq!(gx.to_vec(), hx.to_vec(), "{name}: gradient of x");
        let close = gw
            .to_vec()
            .iter()
            .zip(hw.to_vec())
            .all(|(a, b)| (a - b).abs() <= 1e-4 * b.abs());
        assert!(close, "{name}: gradient of w");
    }
    let mut group = c.benchmark_group("rows");
    group.bench_function("forward/fused", |b| b.iter(|| rows(black_box(&x), &w)));
    group.bench_function("forward/split", |b| {
        b.iter(|| rows_split(black_box(&x), &w))
    });
    group.bench_function("forward/unfused", |b| {
        b.iter(|| rows_unfused(black_box(&x), &w))
    });
    group.bench_function("value_and_grad/fused", |b| {
        b.iter(|| rows_value_and_grad(black_box(&x), &w))
    });
    group.bench_function("value_and_grad/split", |b| {
        b.iter(|| rows_split_value_and_grad(black_box(&x), &w))
    });
    group.bench_function("value_and_grad/unfused", |b| {
        b.iter(|| rows_unfused_value_and_grad(black_box(&x), &w))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
