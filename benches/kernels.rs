//! The `f32` math kernels of `rune_runtime::vmath` one at a time, in the loop every fused region
//! runs them in: 10^6 elements under `vmath::vectorised` (AVX-512, AVX2 or baseline, chosen at
//! run time), beside std's libm `sin` and a copy (the memory floor).
//!
//! `cargo bench -p rune-benches --bench kernels`; docs/benchmarks.md ("W3's profile") reads the
//! medians as ns an element (the time divided by 10^6).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use rune_ad::vmath::exp_log::{exp_f32, ln_f32, tanh_f32};
use rune_ad::vmath::trig::{cos_f32, sin_cos_f32, sin_f32};
use rune_ad::vmath::vectorised;

const N: usize = 1_000_000;

/// `out[i] = f(xs[i])` in the fused loops' vectorised context.
#[inline(always)]
fn run(xs: &[f32], out: &mut [f32], f: impl Fn(f32) -> f32) {
    vectorised(
        #[inline(always)]
        || {
            for (o, &x) in out.iter_mut().zip(xs) {
                *o = f(x);
            }
        },
    );
}

#[allow(clippy::redundant_closure)]
fn kernels(c: &mut Criterion) {
    // W3's inputs: uniform over [-2, 2).
    let xs: Vec<f32> = (0..N).map(|i| -2.0 + 4.0 * i as f32 / N as f32).collect();
    let mut out = vec![0.0f32; N];
    let mut group = c.benchmark_group("kernels_f32_1e6");
    group.sample_size(30);
    macro_rules! kernel {
        ($name:literal, $f:expr) => {
            group.bench_function($name, |b| {
                b.iter(|| {
                    run(
                        black_box(&xs),
                        &mut out,
                        #[inline(always)]
                        $f,
                    );
                    black_box(&out);
                })
            });
        };
    }
    // Each kernel as an `#[inline(always)]` closure, as the fused regions call them: a function
    // item passed as it is calls through a shim that is not inlined into the loop compiled for
    // the CPU's vector instructions, and the loop then runs scalar code (7x slower for `sin`).
    kernel!("copy", |x| x);
    kernel!("sin", |x| sin_f32(x));
    kernel!("cos", |x| cos_f32(x));
    kernel!("sin_plus_cos", |x| sin_f32(x) + cos_f32(x));
    kernel!("sin_cos", |x| {
        let (s, c) = sin_cos_f32(x);
        s + c
    });
    kernel!("exp", |x| exp_f32(x));
    kernel!("ln", |x| ln_f32(x));
    kernel!("tanh", |x| tanh_f32(x));
    kernel!("std_sin", |x: f32| x.sin());
    group.finish();
}

criterion_group!(benches, kernels);
criterion_main!(benches);
