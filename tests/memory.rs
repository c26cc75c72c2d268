//! What a loop's backward pass keeps per iteration, measured with a counting allocator: exactly
//! what the rules read, nothing else.
//!
//! For `y = y * 0.9999 + 0.0001` the product's rule reads the shape of `y` and the constant, the
//! sum's rule the shape of the product: two saved shapes and one `f64` per iteration
//! (2 × 40 + 8 = 88 bytes on 64-bit targets), however large `y` is. The tensors themselves are
//! not kept.
//!
//! And what `#[differentiable(checkpoint)]` saves on a deep chain: the caller keeps only each
//! block's input instead of its intermediates, and pays with a second forward pass of each block
//! during the backward pass.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use rune_ad::prelude::*;

struct Counting;

thread_local! {
    // Per thread, so that the test harness's own allocations on other threads do not count.
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn live() -> usize {
    LIVE.with(Cell::get)
}

// SAFETY: forwards every call to the system allocator unchanged and only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.with(|l| {
            l.set(l.get() + layout.size());
            l.get()
        });
        PEAK.with(|p| p.set(p.get().max(live)));
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // A block freed on another thread than the one that allocated it can take a thread's
        // count below zero: saturate rather than wrap.
        LIVE.with(|l| l.set(l.get().saturating_sub(layout.size())));
        // SAFETY: `ptr` was allocated by `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[differentiable]
fn long_chain(x: &Tensor<f64>, #[nodiff] steps: usize) -> Tensor<f64> {
    let mut y = x.clone();
    for _ in 0..steps {
        y = y * 0.9999 + 0.0001;
    }
    y.sum()
}

#[differentiable(fuse = false)]
fn long_chain_unfused(x: &Tensor<f64>, #[nodiff] steps: usize) -> Tensor<f64> {
    let mut y = x.clone();
    for _ in 0..steps {
        y = y * 0.9999 + 0.0001;
    }
    y.sum()
}

/// The forward pass of a chain: its value and pullback.
type Forward = fn(&Tensor<f64>, usize) -> (Tensor<f64>, Box<dyn Fn(&Tensor<f64>) -> Tensor<f64>>);

/// Bytes alive while the pullback of `steps` iterations is held.
fn kept_by_pullback(forward: Forward, x: &Tensor<f64>, steps: usize) -> usize {
    let before = live();
    let (value, pullback) = forward(x, steps);
    drop(value);
    let kept = live() - before;
    let grad = pullback(&Tensor::scalar(1.0));
    assert!((grad.to_vec()[0] - 0.9999f64.powi(steps as i32)).abs() < 1e-12);
    assert_eq!(long_chain(x, 1).shape(), &[] as &[usize]);
    kept
}

fn per_iteration(forward: Forward) -> usize {
    // A large tensor: if any iteration kept a tensor, the growth would be 80 kB per step.
    let x = Tensor::<f64>::ones(&[10_000]);
    (kept_by_pullback(forward, &x, 2048) - kept_by_pullback(forward, &x, 1024)) / 1024
}

#[test]
fn a_loop_keeps_only_what_its_rules_read() {
    let shape = std::mem::size_of::<rune_ad::__private::SavedShape>();
    // Fused, `y * 0.9999 + 0.0001` is one region whose partial derivatives read its literals
    // alone: an iteration keeps the shape of `y`, to reduce its cotangent to.
    let fused = per_iteration(|x, steps| {
        let (value, pullback) = long_chain::fwd(x, steps);
        (value, Box::new(move |c| pullback.clone()(c).0))
    });
    if cfg!(feature = "no-fusion") {
        assert_eq!(fused, 2 * shape + std::mem::size_of::<f64>());
    } else {
        assert_eq!(fused, shape);
    }
    // Op by op, the product keeps its scalar and both ops the shape of their input.
    let unfused = per_iteration(|x, steps| {
        let (value, pullback) = long_chain_unfused::fwd(x, steps);
        (value, Box::new(move |c| pullback.clone()(c).0))
    });
    assert_eq!(unfused, 2 * shape + std::mem::size_of::<f64>());
    assert_eq!(unfused, 88);
}

// Unfused, so that a plain block keeps its ops' residuals; a fused block keeps its input alone
// (`a_fused_block_keeps_only_its_input`).
#[differentiable(checkpoint, fuse = false)]
fn block_checkpointed(x: &Tensor<f64>) -> Tensor<f64> {
    let a = x.sin() * 1.1;
    let b = a.tanh() + x;
    b.exp() * 0.5
}

#[differentiable(fuse = false)]
fn block(x: &Tensor<f64>) -> Tensor<f64> {
    let a = x.sin() * 1.1;
    let b = a.tanh() + x;
    b.exp() * 0.5
}

#[differentiable]
fn block_fused(x: &Tensor<f64>) -> Tensor<f64> {
    let a = x.sin() * 1.1;
    let b = a.tanh() + x;
    b.exp() * 0.5
}

#[differentiable]
fn deep_fused(x: &Tensor<f64>, #[nodiff] depth: usize) -> Tensor<f64> {
    let mut h = x.clone();
    for _ in 0..depth {
        h = block_fused(&h) * 0.1;
    }
    h.sum()
}

#[differentiable]
fn deep_checkpointed(x: &Tensor<f64>, #[nodiff] depth: usize) -> Tensor<f64> {
    let mut h = x.clone();
    for _ in 0..depth {
        h = block_checkpointed(&h) * 0.1;
    }
    h.sum()
}

#[differentiable]
fn deep(x: &Tensor<f64>, #[nodiff] depth: usize) -> Tensor<f64> {
    let mut h = x.clone();
    for _ in 0..depth {
        h = block(&h) * 0.1;
    }
    h.sum()
}

/// Bytes the pullback keeps after the forward pass, and the peak over forward and backward.
fn measure<P: Fn(&Tensor<f64>) -> Tensor<f64>>(
    run: impl FnOnce() -> (Tensor<f64>, P),
) -> (usize, usize, Tensor<f64>) {
    let before = live();
    PEAK.with(|p| p.set(before));
    let (value, pullback) = run();
    let kept = live() - before;
    let grad = pullback(&Tensor::ones(value.shape()));
    let peak = PEAK.with(Cell::get) - before;
    (kept, peak, grad)
}

#[test]
fn a_checkpoint_keeps_only_block_inputs() {
    let x = Tensor::<f64>::rand_uniform(&[10_000], -0.1, 0.1, 1);
    let depth = 20;
    let (kept_plain, peak_plain, g_plain) = measure(|| deep_pullback(&x, depth));
    let (kept_ckpt, peak_ckpt, g_ckpt) = measure(|| deep_checkpointed_pullback(&x, depth));
    assert!(g_plain.to_vec().iter().all(|v| v.is_finite()));
    assert!(g_plain.to_vec() == g_ckpt.to_vec(), "gradients differ");
    // Each plain block keeps sin(x)·1.1's input x, tanh's output and exp's output (three
    // 80 kB tensors) beyond what the chain itself keeps; a checkpointed block keeps its input.
    let tensor = 10_000 * std::mem::size_of::<f64>();
    println!(
        "depth {depth}, 10^4 f64 elements: kept after forward {kept_plain} B plain, {kept_ckpt} B \
         checkpointed; peak {peak_plain} B plain, {peak_ckpt} B checkpointed"
    );
    assert!(
        kept_plain >= kept_ckpt + 2 * depth * tensor,
        "{kept_plain} vs {kept_ckpt}"
    );
    assert!(peak_ckpt < peak_plain);
}

#[test]
#[cfg_attr(feature = "no-fusion", ignore = "fusion is off")]
fn a_fused_block_keeps_only_its_input() {
    // The block is one fused region whose backward pass recomputes `sin`, `tanh` and `exp` from
    // its input: it keeps what a checkpointed block keeps, with no second forward pass.
    let x = Tensor::<f64>::rand_uniform(&[10_000], -0.1, 0.1, 1);
    let depth = 20;
    let (kept_ckpt, _, g_ckpt) = measure(|| deep_checkpointed_pullback(&x, depth));
    let (kept_fused, _, g_fused) = measure(|| deep_fused_pullback(&x, depth));
    let tensor = 10_000 * std::mem::size_of::<f64>();
    println!("depth {depth}: kept after forward {kept_fused} B fused, {kept_ckpt} B checkpointed");
    assert!(
        kept_fused <= kept_ckpt + depth * 1024,
        "{kept_fused} vs {kept_ckpt}"
    );
    // Each block keeps its input; the first one's is `x`, allocated before the measurement.
    assert!(
        kept_fused >= (depth - 1) * tensor,
        "{kept_fused}: each block keeps its input"
    );
    for (a, b) in g_fused.to_vec().iter().zip(g_ckpt.to_vec()) {
        assert!((a - b).abs() <= 1e-12 * b.abs(), "{a} against {b}");
    }
}

/// W3 of the benchmarks (docs/WORKLOADS.md): one fused region and a sum.
#[differentiable]
fn big_elementwise(x: &Tensor<f32>) -> Tensor<f32> {
    (x.sin().exp() * x * x + (1.0 + x * x).ln()).sum()
}

#[test]
#[cfg_attr(feature = "no-fusion", ignore = "fusion is off")]
fn the_big_elementwise_gradient_peaks_at_one_tensor_beyond_its_input() {
    // The sum ends the region: the forward pass writes no tensor of the region's values, and
    // computes the input's partial derivative (one tensor) in the same pass; the backward pass
    // hands that tensor on as the gradient for a cotangent of one. The block sums take n/128
    // numbers. The target is at most three tensors.
    let n = 100_000;
    let x = Tensor::from_vec(
        (0..n).map(|i| (i as f32 / n as f32) * 4.0 - 2.0).collect(),
        &[n],
    );
    // The hidden forward pass and pullback: the public entry points also run the plain
    // function in the tests (`check-values`), whose op-by-op temporaries would count.
    let before = live();
    PEAK.with(|p| p.set(before));
    let (value, pullback) = big_elementwise::fwd(&x);
    let (grad,) = pullback(&Tensor::scalar(1.0));
    let peak = PEAK.with(Cell::get) - before;
    let tensor = n * std::mem::size_of::<f32>();
    println!(
        "peak beyond the input: {peak} B, {:.2} tensors",
        peak as f64 / tensor as f64
    );
    assert!(
        peak <= tensor + 8192,
        "{peak} B against {tensor} B a tensor"
    );
    // d/dx = cos(x) e^sin(x) x² + 2x e^sin(x) + 2x / (1 + x²), checked at a few elements.
    let (xs, gs) = (x.to_vec(), grad.to_vec());
    for i in [0, 1234, n / 2, n - 1] {
        let v = f64::from(xs[i]);
        let e = v.sin().exp();
        let want = v.cos() * e * v * v + 2.0 * v * e + 2.0 * v / (1.0 + v * v);
        assert!(
            (f64::from(gs[i]) - want).abs() <= 1e-5 * want.abs().max(1.0),
            "{i}"
        );
    }
    assert!(value.item().is_finite());
}
