//! Scalar code: the Lorenz system integrated by 1,000 explicit Euler steps, a function of three
//! `f64` parameters (σ, ρ, β) written as a `#[differentiable]` function of numbers, beside the
//! same loop and its adjoint written by hand, timed in the same run.
//!
//! A step is 14 arithmetic ops (`dx = σ (y − x)`: 2, `dy = x (ρ − z) − y`: 3,
//! `dz = x y − β z`: 3, and 2 for each of the three updates `x += dx dt`), so a run is 14,000
//! ops: docs/benchmarks.md reads the medians as ns an op (the time divided by 14,000). Before
//! timing, the bench checks the generated gradient against the hand-written adjoint and both
//! against central differences, and prints the bytes each gradient allocates (a counting
//! allocator), as bytes an op.
//!
//! `cargo bench -p rune-benches --bench scalars`

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{criterion_group, criterion_main, Criterion};
use rune_ad::prelude::*;

/// Counts the bytes allocated, for the memory an op.
struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to `System` unchanged; the counter only reads the layout.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const STEPS: usize = 1_000;
const OPS_PER_STEP: usize = 14;
const DT: f64 = 0.001;

/// The Lorenz system from (1, 1, 1), integrated by Euler's method; the loss is `x + y + z` at
/// the end.
#[differentiable]
pub fn lorenz(sigma: f64, rho: f64, beta: f64, #[nodiff] steps: usize) -> f64 {
    let mut x = 1.0;
    let mut y = 1.0;
    let mut z = 1.0;
    for _ in 0..steps {
        let dx = sigma * (y - x);
        let dy = x * (rho - z) - y;
        let dz = x * y - beta * z;
        x += dx * DT;
        y += dy * DT;
        z += dz * DT;
    }
    x + y + z
}

/// The same loop by hand.
fn lorenz_hand(sigma: f64, rho: f64, beta: f64, steps: usize) -> f64 {
    let (mut x, mut y, mut z) = (1.0f64, 1.0f64, 1.0f64);
    for _ in 0..steps {
        let dx = sigma * (y - x);
        let dy = x * (rho - z) - y;
        let dz = x * y - beta * z;
        x += dx * DT;
        y += dy * DT;
        z += dz * DT;
    }
    x + y + z
}

/// The gradient by hand: the forward loop keeps each step's state, the reverse loop runs the
/// step's adjoint.
fn lorenz_hand_grad(sigma: f64, rho: f64, beta: f64, steps: usize) -> (f64, f64, f64) {
    let mut states = Vec::with_capacity(steps);
    let (mut x, mut y, mut z) = (1.0f64, 1.0f64, 1.0f64);
    for _ in 0..steps {
        states.push((x, y, z));
        let dx = sigma * (y - x);
        let dy = x * (rho - z) - y;
        let dz = x * y - beta * z;
        x += dx * DT;
        y += dy * DT;
        z += dz * DT;
    }
    let (mut ax, mut ay, mut az) = (1.0f64, 1.0f64, 1.0f64);
    let (mut gs, mut gr, mut gb) = (0.0f64, 0.0f64, 0.0f64);
    for &(x, y, z) in states.iter().rev() {
        // x' = x + σ (y − x) dt, y' = y + (x (ρ − z) − y) dt, z' = z + (x y − β z) dt.
        let (dx, dy, dz) = (ax * DT, ay * DT, az * DT);
        gs += dx * (y - x);
        gr += dy * x;
        gb -= dz * z;
        let nx = ax - dx * sigma + dy * (rho - z) + dz * y;
        let ny = ay + dx * sigma - dy + dz * x;
        let nz = az - dy * x - dz * beta;
        (ax, ay, az) = (nx, ny, nz);
    }
    (gs, gr, gb)
}

fn check() {
    let (s, r, b) = (10.0, 28.0, 8.0 / 3.0);
    let value = lorenz(s, r, b, STEPS);
    assert_eq!(value, lorenz_hand(s, r, b, STEPS), "the value");
    let g = lorenz_grad(s, r, b, STEPS);
    let h = lorenz_hand_grad(s, r, b, STEPS);
    let close = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * b.abs().max(1.0);
    for (got, want) in [(g.0, h.0), (g.1, h.1), (g.2, h.2)] {
        assert!(
            close(got, want, 1e-12),
            "generated {got} against hand {want}"
        );
    }
    let fd = |f: &dyn Fn(f64) -> f64, at: f64| {
        let e = 1e-6;
        (f(at + e) - f(at - e)) / (2.0 * e)
    };
    let fds = [
        fd(&|s| lorenz_hand(s, r, b, STEPS), s),
        fd(&|r| lorenz_hand(s, r, b, STEPS), r),
        fd(&|b| lorenz_hand(s, r, b, STEPS), b),
    ];
    for (got, want) in [h.0, h.1, h.2].into_iter().zip(fds) {
        assert!(
            close(got, want, 1e-6),
            "hand {got} against differences {want}"
        );
    }
    let bytes = |f: &dyn Fn()| {
        let before = ALLOCATED.load(Ordering::Relaxed);
        f();
        ALLOCATED.load(Ordering::Relaxed) - before
    };
    let ops = (STEPS * OPS_PER_STEP) as f64;
    let rune = bytes(&|| {
        black_box(lorenz_grad(s, r, b, STEPS));
    });
    let hand = bytes(&|| {
        black_box(lorenz_hand_grad(s, r, b, STEPS));
    });
    eprintln!(
        "lorenz, {STEPS} steps: bytes allocated by the gradient, rune {rune} ({:.1} an op), \
         hand {hand} ({:.1} an op)",
        rune as f64 / ops,
        hand as f64 / ops
    );
}

fn scalars(c: &mut Criterion) {
    check();
    let (s, r, b) = (10.0, 28.0, 8.0 / 3.0);
    let mut group = c.benchmark_group("lorenz_forward");
    group.bench_function("rune", |bench| {
        bench.iter(|| lorenz(black_box(s), black_box(r), black_box(b), STEPS))
    });
    group.bench_function("hand", |bench| {
        bench.iter(|| lorenz_hand(black_box(s), black_box(r), black_box(b), STEPS))
    });
    group.finish();
    let mut group = c.benchmark_group("lorenz_grad");
    group.bench_function("rune", |bench| {
        bench.iter(|| lorenz_grad(black_box(s), black_box(r), black_box(b), STEPS))
    });
    group.bench_function("hand", |bench| {
        bench.iter(|| lorenz_hand_grad(black_box(s), black_box(r), black_box(b), STEPS))
    });
    group.finish();
}

criterion_group!(benches, scalars);
criterion_main!(benches);
