//! Elementwise functions of one tensor: `exp ln log2 exp2 log1p sin cos tan tanh sigmoid relu
//! sqrt recip abs square`, `clamp(lo, hi)` and `powf(p)`.
//!
//! # Conventions at kinks and singular points
//!
//! - `relu'(0) = 0`, and `abs'(0) = 0` (the subgradient PyTorch picks; `abs'(x) = sign(x)`).
//! - `clamp(lo, hi)` is `min(max(x, lo), hi)` (so `hi` wins when `lo > hi`, as in NumPy and
//!   PyTorch) and passes the gradient where `lo <= x <= hi`, bounds included, as PyTorch does.
//!   Outside the interval, and everywhere when `lo > hi`, the gradient is zero.
//! - `powf(p)` has derivative `p·x^(p-1)` everywhere, also at `x = 0` (`0` for `p > 1`, `1` for
//!   `p = 1`, infinite for `p < 1`), except that `p = 0` gives `0` (the function is constant),
//!   as in JAX.
//! - `sigmoid` is evaluated as `1 / (1 + e^-x)` for `x >= 0` and `e^x / (1 + e^x)` otherwise, so
//!   it neither overflows nor loses relative precision for large `|x|`.
//! - NaN propagates through every forward op (`relu(NaN)` and `clamp(NaN)` are NaN).
//!
//! Gates (`relu`, `clamp`) select the tangent or zero; every other rule multiplies by the local
//! derivative with [`strong_mul`], so a zero tangent stays zero where the derivative is infinite
//! (`sqrt` or `ln` at 0).

use crate::element::{strong_mul, Element, FromScalar};
use crate::tensor::Tensor;

/// `f` applied to every element.
#[inline]
fn map_unary<T: Element>(x: &Tensor<T>, f: impl Fn(T) -> T) -> Tensor<T> {
    x.map(|&v| f(v))
}

/// `rule(d, p)` over a tangent or cotangent `d` and the primal value `p` (input or output) it is
/// paired with, which must have the same shape.
#[track_caller]
fn pair<T: Element>(
    op: &'static str,
    d: &Tensor<T>,
    p: &Tensor<T>,
    rule: impl Fn(T, T) -> T,
) -> Tensor<T> {
    assert!(
        d.shape() == p.shape(),
        "{op}: the tangent or cotangent has shape {:?} but the value it pairs with has shape {:?}",
        d.shape(),
        p.shape()
    );
    d.zip_map(p, |&dv, &pv| rule(dv, pv))
}

/// The chain rule through a local derivative `local(p)`, with a strong zero in the tangent.
#[inline]
fn scaled<T: Element>(local: impl Fn(T) -> T) -> impl Fn(T, T) -> T {
    move |d, p| strong_mul(d, local(p))
}

/// The chain rule through a gate: the tangent where `open(p)`, zero elsewhere.
#[inline]
fn gated<T: Element>(open: impl Fn(T) -> bool) -> impl Fn(T, T) -> T {
    move |d, p| if open(p) { d } else { T::zero() }
}

fn ln_2<T: Element>() -> T {
    T::from_f64(std::f64::consts::LN_2)
}

fn sigmoid_kernel<T: Element>(x: T) -> T {
    if x >= T::zero() {
        T::one() / (T::one() + (-x).exp())
    } else {
        let e = x.exp();
        e / (T::one() + e)
    }
}

fn relu_kernel<T: Element>(x: T) -> T {
    if x <= T::zero() {
        T::zero()
    } else {
        x
    }
}

/// `sign(x)` with `sign(0) = 0` (NaN stays NaN).
fn sign<T: Element>(x: T) -> T {
    if x > T::zero() {
        T::one()
    } else if x < T::zero() {
        -T::one()
    } else if x == T::zero() {
        T::zero()
    } else {
        x
    }
}

fn clamp_kernel<T: Element>(x: T, lo: T, hi: T) -> T {
    let m = if x < lo { lo } else { x };
    if m > hi {
        hi
    } else {
        m
    }
}

/// `d/dx x^p = p·x^(p-1)`, and `0` for `p = 0`.
fn powf_local<T: Element>(x: T, p: T) -> T {
    if p == T::zero() {
        T::zero()
    } else {
        p * x.powf(p - T::one())
    }
}

/// Invokes `$m!` on the table of one-argument ops without configuration:
/// `name, jvp, vjp, what the rules read (x or y), doc, kernel, rule (from the read value)`.
macro_rules! for_each_unary {
    ($m:ident) => {
        $m! {
            exp, exp_jvp, exp_vjp, y, "`e^x`.",
                |x| x.exp(), scaled(|y: T| y);
            ln, ln_jvp, ln_vjp, x, "The natural logarithm (NaN below 0, `-inf` at 0).",
                |x| x.ln(), scaled(|x: T| x.recip());
            log2, log2_jvp, log2_vjp, x, "The base-2 logarithm.",
                |x| x.log2(), scaled(|x: T| (x * ln_2::<T>()).recip());
            exp2, exp2_jvp, exp2_vjp, y, "`2^x`.",
                |x| x.exp2(), scaled(|y: T| y * ln_2::<T>());
            log1p, log1p_jvp, log1p_vjp, x, "`ln(1 + x)`, accurate for small `x`.",
                |x| x.ln_1p(), scaled(|x: T| (T::one() + x).recip());
            sin, sin_jvp, sin_vjp, x, "The sine.",
                |x| x.sin(), scaled(|x: T| x.cos());
            cos, cos_jvp, cos_vjp, x, "The cosine.",
                |x| x.cos(), scaled(|x: T| -x.sin());
            tan, tan_jvp, tan_vjp, y, "The tangent.",
                |x| x.tan(), scaled(|y: T| T::one() + y * y);
            tanh, tanh_jvp, tanh_vjp, y, "The hyperbolic tangent.",
                |x| x.tanh(), scaled(|y: T| T::one() - y * y);
            sigmoid, sigmoid_jvp, sigmoid_vjp, y,
                "The logistic function `1 / (1 + e^-x)`, stable for large `|x|`.",
                sigmoid_kernel, scaled(|y: T| y * (T::one() - y));
            relu, relu_jvp, relu_vjp, x, "`max(x, 0)`; the derivative at 0 is 0.",
                relu_kernel, gated(|x: T| x > T::zero());
            sqrt, sqrt_jvp, sqrt_vjp, y, "The square root (NaN below 0).",
                |x| x.sqrt(), scaled(|y: T| (y + y).recip());
            recip, recip_jvp, recip_vjp, y, "`1 / x`.",
                |x| x.recip(), scaled(|y: T| -(y * y));
            abs, abs_jvp, abs_vjp, x, "`|x|`; the derivative at 0 is 0.",
                |x| x.abs(), scaled(sign);
            square, square_jvp, square_vjp, x, "`x * x`.",
                |x| x * x, scaled(|x: T| x + x);
        }
    };
}

macro_rules! forward_methods {
    ($($name:ident, $jvp:ident, $vjp:ident, $reads:ident, $doc:literal, $kernel:expr, $rule:expr;)*) => {
        impl<T: Element> Tensor<T> {
            $(
                #[doc = $doc]
                #[must_use]
                pub fn $name(&self) -> Tensor<T> {
                    map_unary(self, $kernel)
                }
            )*
        }
    };
}
for_each_unary!(forward_methods);

impl<T: Element> Tensor<T> {
    /// Each element clamped to `[lo, hi]`: `min(max(x, lo), hi)`, so `hi` wins when `lo > hi`.
    ///
    /// The bounds are scalars that tensors of `T` take ([`FromScalar`]): `T`, or `f64` for any
    /// `T`, so `x.clamp(-1.0, 1.0)` reads in code generic over `T: Element` too.
    #[must_use]
    pub fn clamp<L, H>(&self, lo: L, hi: H) -> Tensor<T>
    where
        T: FromScalar<L> + FromScalar<H>,
    {
        let (lo, hi) = (T::from_scalar(lo), T::from_scalar(hi));
        map_unary(self, |x| clamp_kernel(x, lo, hi))
    }

    /// `x^p` for a constant exponent `p` (NaN for a negative base and a non-integer `p`).
    ///
    /// `p` is a scalar that tensors of `T` take ([`FromScalar`]): `T`, or `f64` for any `T`, so
    /// `x.powf(2.0)` reads in code generic over `T: Element` too.
    #[must_use]
    pub fn powf<S>(&self, p: S) -> Tensor<T>
    where
        T: FromScalar<S>,
    {
        let p = T::from_scalar(p);
        map_unary(self, |x| x.powf(p))
    }
}

// ---- rules ----------------------------------------------------------------------------------
//
// | op      | reads | local derivative         | op      | reads | local derivative      |
// |---------|-------|--------------------------|---------|-------|-----------------------|
// | exp     | y     | y                        | tanh    | y     | 1 - y²                |
// | ln      | x     | 1/x                      | sigmoid | y     | y(1 - y)              |
// | log2    | x     | 1/(x ln 2)               | relu    | x     | gate x > 0            |
// | exp2    | y     | y ln 2                   | sqrt    | y     | 1/(2y)                |
// | log1p   | x     | 1/(1 + x)                | recip   | y     | -y²                   |
// | sin     | x     | cos x                    | abs     | x     | sign x (0 at 0)       |
// | cos     | x     | -sin x                   | square  | x     | 2x                    |
// | tan     | y     | 1 + y²                   | clamp   | x     | gate lo <= x <= hi    |
// | powf    | x     | p·x^(p-1) (0 if p = 0)   |         |       |                       |
//
// JVP and VJP of an elementwise op are the same product: tangent or cotangent times the local
// derivative.

/// Rules of the unary ops (see the module's table).
pub mod rules {
    use super::*;

    macro_rules! rule_fns {
        ($($name:ident, $jvp:ident, $vjp:ident, $reads:ident, $doc:literal, $kernel:expr, $rule:expr;)*) => {$(
            #[doc = concat!("JVP of [`Tensor::", stringify!($name), "`], from ",
                rule_fns!(@reads $reads), " and the input tangent `dx`.")]
            ///
            /// # Panics
            /// When the two shapes differ.
            #[track_caller]
            #[must_use]
            pub fn $jvp<T: Element>($reads: &Tensor<T>, dx: &Tensor<T>) -> Tensor<T> {
                pair(stringify!($jvp), dx, $reads, $rule)
            }

            #[doc = concat!("VJP of [`Tensor::", stringify!($name), "`]: the cotangent `g` \
                pulled back to the input, from ", rule_fns!(@reads $reads), ".")]
            ///
            /// # Panics
            /// When the two shapes differ.
            #[track_caller]
            #[must_use]
            pub fn $vjp<T: Element>(g: &Tensor<T>, $reads: &Tensor<T>) -> Tensor<T> {
                pair(stringify!($vjp), g, $reads, $rule)
            }
        )*};
        (@reads x) => { "the input `x`" };
        (@reads y) => { "the output `y`" };
    }
    for_each_unary!(rule_fns);

    /// JVP of [`Tensor::clamp`], from the input `x`: `dx` where `lo <= x <= hi`, else 0.
    ///
    /// # Panics
    /// When the two shapes differ.
    #[track_caller]
    #[must_use]
    pub fn clamp_jvp<T: Element>(x: &Tensor<T>, lo: T, hi: T, dx: &Tensor<T>) -> Tensor<T> {
        pair("clamp_jvp", dx, x, gated(|x| lo <= x && x <= hi))
    }

    /// VJP of [`Tensor::clamp`], from the input `x`: `g` where `lo <= x <= hi`, else 0.
    ///
    /// # Panics
    /// When the two shapes differ.
    #[track_caller]
    #[must_use]
    pub fn clamp_vjp<T: Element>(g: &Tensor<T>, x: &Tensor<T>, lo: T, hi: T) -> Tensor<T> {
        pair("clamp_vjp", g, x, gated(|x| lo <= x && x <= hi))
    }

    /// JVP of [`Tensor::powf`], from the input `x`: `dx · p·x^(p-1)`.
    ///
    /// # Panics
    /// When the two shapes differ.
    #[track_caller]
    #[must_use]
    pub fn powf_jvp<T: Element>(x: &Tensor<T>, p: T, dx: &Tensor<T>) -> Tensor<T> {
        pair("powf_jvp", dx, x, scaled(|x| powf_local(x, p)))
    }

    /// VJP of [`Tensor::powf`], from the input `x`: `g · p·x^(p-1)`.
    ///
    /// # Panics
    /// When the two shapes differ.
    #[track_caller]
    #[must_use]
    pub fn powf_vjp<T: Element>(g: &Tensor<T>, x: &Tensor<T>, p: T) -> Tensor<T> {
        pair("powf_vjp", g, x, scaled(|x| powf_local(x, p)))
    }
}

/// The unary ops.
pub const RULES: &[crate::ops::OpInfo] = &[
    crate::ops::OpInfo::diff("exp", "composite: exp2, mul"),
    crate::ops::OpInfo::diff("ln", "composite: log2, mul"),
    crate::ops::OpInfo::diff("log2", "log2"),
    crate::ops::OpInfo::diff("exp2", "exp2"),
    crate::ops::OpInfo::diff("log1p", "composite: add, log2, mul"),
    crate::ops::OpInfo::diff("sin", "sin"),
    crate::ops::OpInfo::diff("cos", "composite: sin, add"),
    crate::ops::OpInfo::diff("tan", "composite: sin, fdiv"),
    crate::ops::OpInfo::diff("tanh", "composite: exp2, add, recip, mul"),
    crate::ops::OpInfo::diff("sigmoid", "composite: exp2, add, recip"),
    crate::ops::OpInfo::diff("relu", "composite: max"),
    crate::ops::OpInfo::diff("sqrt", "sqrt"),
    crate::ops::OpInfo::diff("recip", "recip"),
    crate::ops::OpInfo::diff("abs", "composite: cmplt, where, neg"),
    crate::ops::OpInfo::diff("square", "composite: mul"),
    crate::ops::OpInfo::diff("clamp", "composite: max, neg"),
    crate::ops::OpInfo::diff("powf", "pow"),
];
