//! Shared helpers of the rule tests.

use rune_runtime::{grad_fn, Element, GradFn, Tensor};

/// One gradient check: an op on given inputs with its JVP and VJP written through the rules.
pub struct Case<T: Element> {
    pub op: &'static str,
    pub label: &'static str,
    pub args: Vec<Tensor<T>>,
    pub f: Box<dyn GradFn<T>>,
}

type Args<T> = [Tensor<T>];

impl<T: Element> Case<T> {
    pub fn new(
        op: &'static str,
        label: &'static str,
        args: Vec<Tensor<T>>,
        value: impl Fn(&Args<T>) -> Tensor<T> + 'static,
        jvp: impl Fn(&Args<T>, &Args<T>) -> Tensor<T> + 'static,
        vjp: impl Fn(&Args<T>, &Tensor<T>) -> Vec<Tensor<T>> + 'static,
    ) -> Self {
        Case {
            op,
            label,
            args,
            f: Box::new(grad_fn(value, jvp, vjp)),
        }
    }
}

/// Uniform samples in `[lo, hi)` with a fixed seed.
pub fn uniform<T: Element>(shape: &[usize], lo: f64, hi: f64, seed: u64) -> Tensor<T> {
    Tensor::rand_uniform(shape, T::from_f64(lo), T::from_f64(hi), seed)
}

/// A tensor from f64 values.
pub fn tensor<T: Element>(values: &[f64], shape: &[usize]) -> Tensor<T> {
    Tensor::from_vec(values.iter().map(|&v| T::from_f64(v)).collect(), shape)
}

/// Asserts that two tensors have the same shape and agree elementwise within `tol`.
#[track_caller]
pub fn assert_close<T: Element>(actual: &Tensor<T>, expected: &[f64], tol: f64) {
    let got: Vec<f64> = actual.to_vec().into_iter().map(|v| v.to_real()).collect();
    assert_eq!(
        got.len(),
        expected.len(),
        "length of {got:?} vs {expected:?}"
    );
    for (g, e) in got.iter().zip(expected) {
        assert!(
            (g - e).abs() <= tol * (1.0 + e.abs()),
            "got {got:?}, expected {expected:?}"
        );
    }
}

/// The message of a panic caught from `f`.
pub fn panic_message<R>(f: impl FnOnce() -> R + std::panic::UnwindSafe) -> String {
    let err = std::panic::catch_unwind(f).err().expect("expected a panic");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Matrices `M + shift·I` with `M` uniform in `[-0.5, 0.5)`: well-conditioned for `shift >= 2`.
pub fn shifted<T: Element>(shape: &[usize], shift: f64, seed: u64) -> Tensor<T> {
    let m: Tensor<T> = uniform(shape, -0.5, 0.5, seed);
    let n = shape[shape.len() - 1];
    m + Tensor::<T>::eye(n) * T::from_f64(shift)
}

/// Symmetric positive-definite matrices `M Mᵀ + I`.
pub fn spd<T: Element>(shape: &[usize], seed: u64) -> Tensor<T> {
    let m: Tensor<T> = uniform(shape, -1.0, 1.0, seed);
    let n = shape[shape.len() - 1];
    m.matmul(&m.t()) + Tensor::<T>::eye(n)
}
