//! The elementwise functions of [`Tensor`](crate::Tensor) on numbers, under the names `f32` and
//! `f64` lack.

use super::{
    digamma, expm1, gelu, gelu_tanh, lgamma, log1p, log_sigmoid, relu, sigmoid, sign, silu,
    softplus, square,
};

/// The elementwise functions of [`Tensor`](crate::Tensor) that `f32` and `f64` lack under these
/// names, on numbers (in the prelude): `x.log1p()`, `x.sigmoid()`, `x.lgamma()`.. compute what
/// the tensor ops compute, element for element, and a function of numbers differentiates them
/// as it does the tensor ops. Rust's own names of the same functions work as well (`ln_1p`,
/// `exp_m1`), and Rust's methods keep their meaning (`round`, `signum`). `erf`, `erfc` and
/// `erfinv` are [`Element`](crate::Element)'s.
///
/// In a function of numbers (`rune_ad`'s `#[differentiable]`), `(w * x).sigmoid()` and
/// `(-p).log1p()` are differentiated as the tensor ops `sigmoid` and `log1p` are.
///
/// ```
/// use rune_runtime::NumberMethods;
///
/// assert_eq!(0.0f64.sigmoid(), 0.5);
/// assert_eq!(1e-20f64.log1p(), 1e-20);
/// assert_eq!((-0.0f32).sign(), 0.0);
/// ```
pub trait NumberMethods: Copy {
    /// `ln(1 + x)`, accurate for small `x` (Rust's `ln_1p`).
    fn log1p(self) -> Self;
    /// `e^x - 1`, accurate for small `x` (Rust's `exp_m1`).
    fn expm1(self) -> Self;
    /// The logistic function `1 / (1 + e^-x)`.
    fn sigmoid(self) -> Self;
    /// `max(x, 0)`; the derivative at 0 is 0.
    fn relu(self) -> Self;
    /// `x · sigmoid(x)`.
    fn silu(self) -> Self;
    /// The exact GELU, `x Φ(x)`.
    fn gelu(self) -> Self;
    /// GELU's tanh approximation.
    fn gelu_tanh(self) -> Self;
    /// `ln(1 + e^x)`, stable for large `|x|`.
    fn softplus(self) -> Self;
    /// `ln(sigmoid(x))`, stable for large `|x|`.
    fn log_sigmoid(self) -> Self;
    /// `ln |Γ(x)|`.
    fn lgamma(self) -> Self;
    /// The digamma function `Γ'(x)/Γ(x)`.
    fn digamma(self) -> Self;
    /// `x * x`.
    fn square(self) -> Self;
    /// `-1`, `0` or `1` by the sign of `x` (`0` at `±0`, NaN kept; Rust's `signum` is `±1` at
    /// `±0`).
    fn sign(self) -> Self;
}

macro_rules! number_methods {
    ($($t:ty)*) => {$(
        impl NumberMethods for $t {
            #[inline]
            fn log1p(self) -> Self { log1p::value(self) }
            #[inline]
            fn expm1(self) -> Self { expm1::value(self) }
            #[inline]
            fn sigmoid(self) -> Self { sigmoid::value(self) }
            #[inline]
            fn relu(self) -> Self { relu::value(self) }
            #[inline]
            fn silu(self) -> Self { silu::value(self) }
            #[inline]
            fn gelu(self) -> Self { gelu::value(self) }
            #[inline]
            fn gelu_tanh(self) -> Self { gelu_tanh::value(self) }
            #[inline]
            fn softplus(self) -> Self { softplus::value(self) }
            #[inline]
            fn log_sigmoid(self) -> Self { log_sigmoid::value(self) }
            #[inline]
            fn lgamma(self) -> Self { lgamma::value(self) }
            #[inline]
            fn digamma(self) -> Self { digamma::value(self) }
            #[inline]
            fn square(self) -> Self { square::value(self) }
            #[inline]
            fn sign(self) -> Self { sign::value(self) }
        }
    )*};
}
number_methods!(f32 f64);
