//! The `f32` math kernels of `rune_runtime::vmath` one at a time, in the loop every fused region
//! runs them in: 10^6 elements under `vmath::vectorised` (AVX-512, AVX2 or baseline, chosen at
//! run time), beside std's libm `sin` and a copy (the memory floor).
//!
//! The `_avx2` and `_baseline` entries run at those levels instead of the widest.
//! `sin_fast`, `sin_cos_fast` and `tan_fast` are the fast forms alone (valid for |x| ≤ 6000),
//! and the `_blocks` entries run the scalar forms as the loops do: blocks of 64 elements with the
//! fast kernels, again with the full-range ones only for a block with an argument out of their
//! range. The `dual_` entries take `Dual<f32>` (value and tangent) through the same loops.
//!
//! `cargo bench -p rune-benches --bench kernels`; docs/benchmark-history.md ("W3's profile") reads the
//! medians as ns an element (the time divided by 10^6).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use rune_ad::__private::scalar::{cos, exp, sin, tan};
use rune_ad::__private::vmath::exp_log::{exp_f32, ln_f32, tanh_f32};
use rune_ad::__private::vmath::trig::{
    cos_f32, sin_cos_f32, sin_cos_f32_fast, sin_f32, sin_f32_fast, tan_f32, tan_f32_fast,
};
use rune_ad::__private::vmath::{fast_then_exact, vectorised_at, Kernels, Level};
use rune_ad::Dual;

const N: usize = 1_000_000;

/// `out[i] = f(xs[i])` in the fused loops' vectorised context, at `level` (or the widest
/// below it this CPU has).
#[inline(always)]
fn run<T: Copy>(level: Level, xs: &[T], out: &mut [T], f: impl Fn(T) -> T) {
    vectorised_at(
        level,
        #[inline(always)]
        || {
            for (o, &x) in out.iter_mut().zip(xs) {
                *o = f(x);
            }
        },
    );
}

/// `out[i] = f(xs[i], kernels)` as the fused loops run it: blocks of 64 elements, each with the
/// fast kernels and again with the full-range ones when one met an argument outside its range.
#[inline(always)]
fn run_blocks<T: Copy>(level: Level, xs: &[T], out: &mut [T], f: impl Fn(T, &Kernels) -> T) {
    vectorised_at(
        level,
        #[inline(always)]
        || {
            for (o, x) in out.chunks_mut(64).zip(xs.chunks(64)) {
                fast_then_exact(
                    #[inline(always)]
                    |k| {
                        for (o, &x) in o.iter_mut().zip(x) {
                            *o = f(x, k);
                        }
                    },
                );
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
    let widest = Level::detected();
    // `Dual<f32>` inputs with tangent one, for the `dual_` entries.
    let duals: Vec<Dual<f32>> = xs.iter().map(|&x| Dual::variable(x)).collect();
    let mut dual_out = vec![Dual::<f32>::default(); N];
    // `bench!(runner, name, level, closure)`: one kernel over `xs` (or `duals`, into `dual_out`)
    // by `run` (element by element) or `run_blocks` (per block, fast kernels first).
    macro_rules! bench {
        ($runner:ident, $name:expr, $level:expr, $f:expr) => {
            bench!($runner, $name, $level, $f, xs, out)
        };
        ($runner:ident, $name:expr, $level:expr, $f:expr, $xs:ident, $out:ident) => {
            group.bench_function($name, |b| {
                b.iter(|| {
                    $runner(
                        $level,
                        black_box(&$xs),
                        &mut $out,
                        #[inline(always)]
                        $f,
                    );
                    black_box(&$out);
                })
            });
        };
    }
    macro_rules! kernel {
        ($name:literal, $f:expr) => {
            bench!(run, $name, widest, $f)
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
    kernel!("tan", |x| tan_f32(x));
    // The fast forms alone (|x| <= 6000), and as the loops run them, per block of 64 with the
    // full-range fallback.
    kernel!("sin_fast", |x| sin_f32_fast(x));
    kernel!("sin_cos_fast", |x| {
        let (s, c) = sin_cos_f32_fast(x);
        s + c
    });
    kernel!("tan_fast", |x| tan_f32_fast(x));
    macro_rules! blocks {
        ($name:literal, $f:expr) => {
            bench!(run_blocks, $name, widest, $f)
        };
    }
    blocks!("sin_blocks", |x, k| sin::value_in(x, k));
    blocks!("sin_plus_cos_blocks", |x, k| sin::value_in(x, k)
        + cos::value_in(x, k));
    blocks!("tan_blocks", |x, k| tan::value_in(x, k));
    // `Dual<f32>` value and tangent through `sin`, `exp` and `tan`: the full-range functions
    // element by element, and per block as the loops run them.
    bench!(
        run,
        "dual_sin",
        widest,
        |x: Dual<f32>| sin::value(x),
        duals,
        dual_out
    );
    bench!(
        run_blocks,
        "dual_sin_blocks",
        widest,
        |x, k| sin::value_in(x, k),
        duals,
        dual_out
    );
    bench!(
        run,
        "dual_exp",
        widest,
        |x: Dual<f32>| exp::value(x),
        duals,
        dual_out
    );
    bench!(
        run,
        "dual_tan",
        widest,
        |x: Dual<f32>| tan::value(x),
        duals,
        dual_out
    );
    bench!(
        run_blocks,
        "dual_tan_blocks",
        widest,
        |x, k| tan::value_in(x, k),
        duals,
        dual_out
    );
    // The same at the narrower levels (the widest this CPU has at most): each loop vectorises
    // at every level, so the blocks stay about a third of the full-range functions' time.
    for (name, level) in [("avx2", Level::Avx2), ("baseline", Level::Baseline)] {
        bench!(run, format!("sin_plus_cos_{name}"), level, |x| sin_f32(x)
            + cos_f32(x));
        bench!(
            run_blocks,
            format!("sin_plus_cos_blocks_{name}"),
            level,
            |x, k| sin::value_in(x, k) + cos::value_in(x, k)
        );
    }
    kernel!("exp", |x| exp_f32(x));
    kernel!("ln", |x| ln_f32(x));
    kernel!("tanh", |x| tanh_f32(x));
    kernel!("std_sin", |x: f32| x.sin());
    group.finish();
}

criterion_group!(benches, kernels);
criterion_main!(benches);
