//! The `parallel` feature on two workloads: W3 (`big-elementwise`, one fused region of 10^6
//! elements) and W1 (`mlp`) with a batch of 1,024 rows instead of 64, value and gradient, on
//! rayon pools of one and of two threads in the same run.
//!
//! `cargo bench -p rune-benches --features parallel --bench parallel`; the ratio of the two
//! medians is the speed-up (docs/benchmarks.md). Before timing, each workload checks that both
//! pools give the same value and gradient, bit for bit.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use rune_ad::__private::workload_tensor;
use rune_ad::prelude::*;

/// W3: `sum(exp(sin(x)) * x * x + log(1 + x*x))`.
#[differentiable]
fn big_elementwise_loss(x: &Tensor<f32>) -> Tensor<f32> {
    (x.sin().exp() * x * x + (1.0 + x * x).ln()).sum()
}

/// W1 with `BATCH` rows: `sum((tanh(X W1 + b1) W2 + b2 - Y)^2) / BATCH`.
#[differentiable]
fn mlp_loss(
    w1: &Tensor<f32>,
    b1: &Tensor<f32>,
    w2: &Tensor<f32>,
    b2: &Tensor<f32>,
    #[nodiff] x: &Tensor<f32>,
    #[nodiff] y: &Tensor<f32>,
) -> Tensor<f32> {
    let h = (x.matmul(w1) + b1).tanh();
    let o = h.matmul(w2) + b2;
    let d = o - y;
    (&d * &d).sum() / BATCH as f32
}

const BATCH: usize = 1024;

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a rayon thread pool")
}

fn bits(tensors: &[&Tensor<f32>]) -> Vec<Vec<u32>> {
    tensors
        .iter()
        .map(|t| t.to_vec().iter().map(|v| v.to_bits()).collect())
        .collect()
}

fn w3(c: &mut Criterion) {
    let x = workload_tensor::<f32>(&[1_000_000], 31, -2.0, 2.0);
    let run = || big_elementwise_loss_value_and_grad(&x);
    let (one, two) = (pool(1), pool(2));
    let (v1, g1) = one.install(run);
    let (v2, g2) = two.install(run);
    assert_eq!(
        bits(&[&v1, &g1]),
        bits(&[&v2, &g2]),
        "W3: one and two threads differ"
    );
    let mut group = c.benchmark_group("parallel/w3_big_elementwise/value_and_grad");
    group.sample_size(20);
    group.bench_function("threads=1", |b| b.iter(|| one.install(|| black_box(run()))));
    group.bench_function("threads=2", |b| b.iter(|| two.install(|| black_box(run()))));
    group.finish();
}

fn w1_batch_1024(c: &mut Criterion) {
    let x = workload_tensor::<f32>(&[BATCH, 784], 11, 0.0, 1.0);
    let w1 = workload_tensor::<f32>(&[784, 256], 12, -0.05, 0.05);
    let b1 = workload_tensor::<f32>(&[256], 13, -0.1, 0.1);
    let w2 = workload_tensor::<f32>(&[256, 10], 14, -0.0625, 0.0625);
    let b2 = workload_tensor::<f32>(&[10], 15, -0.1, 0.1);
    let y = workload_tensor::<f32>(&[BATCH, 10], 16, 0.0, 1.0);
    let run = || mlp_loss_value_and_grad(&w1, &b1, &w2, &b2, &x, &y);
    let (one, two) = (pool(1), pool(2));
    let (v1, (a1, b1g, c1, d1)) = one.install(run);
    let (v2, (a2, b2g, c2, d2)) = two.install(run);
    // The products split their sums across threads differently from one thread: the values
    // agree to rounding, not bit for bit.
    let close = |a: &Tensor<f32>, b: &Tensor<f32>| {
        let (a, b) = (a.to_vec(), b.to_vec());
        let scale = a.iter().fold(0f32, |m, v| m.max(v.abs()));
        a.iter().zip(&b).all(|(x, y)| (x - y).abs() <= 1e-4 * scale)
    };
    assert!(
        close(&v1, &v2)
            && close(&a1, &a2)
            && close(&b1g, &b2g)
            && close(&c1, &c2)
            && close(&d1, &d2),
        "W1 batch 1024: one and two threads differ beyond rounding"
    );
    let mut group = c.benchmark_group("parallel/w1_mlp_batch_1024/value_and_grad");
    group.sample_size(20);
    group.bench_function("threads=1", |b| b.iter(|| one.install(|| black_box(run()))));
    group.bench_function("threads=2", |b| b.iter(|| two.install(|| black_box(run()))));
    group.finish();
}

criterion_group! {
    name = parallel;
    config = Criterion::default().measurement_time(Duration::from_secs(5));
    targets = w3, w1_batch_1024
}
criterion_main!(parallel);
