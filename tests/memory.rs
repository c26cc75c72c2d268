//! What a loop's backward pass keeps per iteration, measured with a counting allocator: exactly
//! what the rules read, nothing else.
//!
//! For `y = y * 0.9999 + 0.0001` the product's rule reads the shape of `y` and the constant, the
//! sum's rule the shape of the product: two saved shapes and one `f64` per iteration
//! (2 × 40 + 8 = 88 bytes on 64-bit targets), however large `y` is. The tensors themselves are
//! not kept.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use rune_ad::prelude::*;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged and only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::SeqCst);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
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

/// Bytes alive while the pullback of `steps` iterations is held.
fn kept_by_pullback(x: &Tensor<f64>, steps: usize) -> usize {
    let before = LIVE.load(Ordering::SeqCst);
    let (value, pullback) = long_chain_fwd(x, steps);
    drop(value);
    let kept = LIVE.load(Ordering::SeqCst) - before;
    let slots = pullback(&Tensor::scalar(1.0));
    assert!((slots.0.to_vec()[0] - 0.9999f64.powi(steps as i32)).abs() < 1e-12);
    assert_eq!(long_chain(x, 1).shape(), &[] as &[usize]);
    kept
}

#[test]
fn a_loop_keeps_only_what_its_rules_read() {
    // A large tensor: if any iteration kept a tensor, the growth would be 80 kB per step.
    let x = Tensor::<f64>::ones(&[10_000]);
    let per_iteration = (kept_by_pullback(&x, 2048) - kept_by_pullback(&x, 1024)) / 1024;
    let shape = std::mem::size_of::<rune_ad::__private::SavedShape>();
    assert_eq!(per_iteration, 2 * shape + std::mem::size_of::<f64>());
    assert_eq!(per_iteration, 88);
}
