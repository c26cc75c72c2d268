//! Binary ops between operands that broadcast against each other, in every common pattern,
//! beside a binary op on two tensors of the output's shape (the floor): elements of the output
//! per nanosecond are the time divided into the element count.
//!
//! `cargo bench -p rune-benches --bench broadcast`; docs/benchmarks.md ("Broadcasting binary
//! ops") has the figures.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use rune_ad::{Element, Tensor};

/// `(name, lhs shape, rhs shape)`: N-body's pairwise differences of points in 3-d, a bias row,
/// a column, an outer sum, a broadcast in the middle, and the same-shape floor.
const PATTERNS: &[(&str, &[usize], &[usize])] = &[
    ("pairs_512x512x3", &[512, 1, 3], &[1, 512, 3]),
    ("row_1024x256", &[1024, 256], &[256]),
    ("column_1024x256", &[1024, 256], &[1024, 1]),
    ("outer_1024x1024", &[1024, 1], &[1, 1024]),
    ("middle_64x64x64", &[64, 1, 64], &[64, 64, 1]),
    ("same_shape_512x512x3", &[512, 512, 3], &[512, 512, 3]),
];

fn patterns<T: Element>(c: &mut Criterion, dtype: &str) {
    let mut group = c.benchmark_group(format!("broadcast_sub_{dtype}"));
    group.sample_size(20);
    for &(name, a, b) in PATTERNS {
        let x: Tensor<T> = Tensor::rand_uniform(a, T::from_f64(-1.0), T::from_f64(1.0), 1);
        let y: Tensor<T> = Tensor::rand_uniform(b, T::from_f64(-1.0), T::from_f64(1.0), 2);
        group.bench_function(name, |bench| bench.iter(|| black_box(&x) - black_box(&y)));
    }
    group.finish();
}

fn broadcast(c: &mut Criterion) {
    patterns::<f64>(c, "f64");
    patterns::<f32>(c, "f32");
}

criterion_group!(benches, broadcast);
criterion_main!(benches);
