//! Elementwise functions of one tensor: those of the registry's table (`rune_ops::for_each_unary!`:
//! `exp ln log2 exp2 log1p sin cos tan tanh sigmoid relu sqrt recip abs square`), built from their
//! scalar forms in [`crate::scalar`], and `clamp(lo, hi)`, `powf(p)` and `powi(n)`.
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
//!   it neither overflows nor loses relative precision for large `|x|`. The derivatives of
//!   `tanh` and `sigmoid` are computed from `x`, not from the rounded output (see
//!   [`crate::scalar`]), so they keep their relative precision where the output saturates.
//! - NaN propagates through every forward op (`relu(NaN)` and `clamp(NaN)` are NaN).
//!
//! Gates (`relu`, `clamp`) select the tangent or zero; every other rule multiplies by the local
//! derivative with [`strong_mul`](crate::element::strong_mul), so a zero tangent stays zero where the derivative is infinite
//! (`sqrt` or `ln` at 0).

use crate::element::{Element, FromScalar};
use crate::scalar;
use crate::tensor::Tensor;
use crate::vmath::Kernels;

/// `rule(d, p)` over a tangent or cotangent `d` and the primal value `p` (input or output) it is
/// paired with, which must have the same shape. Every rule is linear in `d` (`d · f'(p)`), so a
/// `p` that repeats one example (a value a batch shares) costs the slopes of one example.
#[track_caller]
fn pair<T: Element>(
    op: &'static str,
    d: &Tensor<T>,
    p: &Tensor<T>,
    rule: impl Fn(T, T) -> T,
) -> Tensor<T> {
    check_pair(op, d, p);
    if let Some((example, _)) = p.repeated_parts() {
        // Linear in `d`: the slope of one example, broadcast along the copies.
        return d * &example.map_elems(|&pv| rule(T::one(), pv));
    }
    d.zip_map(
        p,
        #[inline(always)]
        |&dv, &pv| rule(dv, pv),
    )
}

/// That a tangent or cotangent `d` has the shape of the value `p` it pairs with.
#[track_caller]
fn check_pair<T: Element>(op: &'static str, d: &Tensor<T>, p: &Tensor<T>) {
    assert!(
        d.shape() == p.shape(),
        "{op}: the tangent or cotangent has shape {:?} but the value it pairs with has shape {:?}",
        d.shape(),
        p.shape()
    );
}

/// [`pair`] for a rule of the kernels of a loop's pass ([`Kernels`]), run in blocks with the
/// fast kernels first.
#[track_caller]
fn pair_in<T: Element>(
    op: &'static str,
    d: &Tensor<T>,
    p: &Tensor<T>,
    rule: impl Fn(T, T, &Kernels) -> T,
) -> Tensor<T> {
    check_pair(op, d, p);
    if let Some((example, _)) = p.repeated_parts() {
        // Linear in `d`: the slope of one example, broadcast along the copies.
        return d * &example.map_elems_in(|&pv, k| rule(T::one(), pv, k));
    }
    d.zip_map_in(
        p,
        #[inline(always)]
        |&dv, &pv, k| rule(dv, pv, k),
    )
}

/// The scalar forms of `clamp`, `powf` and `powi`: each op's value and a tangent or cotangent
/// `d` through it (`_d`). The tensor kernels and rules apply them element by element, and fused
/// regions of `#[differentiable]` code inline them, so the two compute the same numbers.
pub mod elementwise {
    use crate::element::{strong_mul, Element};

    /// `x` clamped to `[lo, hi]`: `min(max(x, lo), hi)`, NaN kept.
    #[inline]
    pub fn clamp<T: Element>(x: T, lo: T, hi: T) -> T {
        let m = if x < lo { lo } else { x };
        if m > hi {
            hi
        } else {
            m
        }
    }

    /// `d` through `clamp`: `d` where `lo <= x <= hi`, else 0.
    #[inline]
    pub fn clamp_d<T: Element>(d: T, x: T, lo: T, hi: T) -> T {
        if lo <= x && x <= hi {
            d
        } else {
            T::zero()
        }
    }

    /// `x^p`.
    #[inline]
    pub fn powf<T: Element>(x: T, p: T) -> T {
        x.vpowf(p)
    }

    /// `d` through `powf`: `d·p·x^(p-1)`, and 0 for `p = 0`.
    #[inline]
    pub fn powf_d<T: Element>(d: T, x: T, p: T) -> T {
        // `p` a strong factor, as in `pow`'s rule: zero at `p = 0` even where `x^(p-1)` is not
        // finite, without dropping the derivative along a dual `p`.
        strong_mul(d, p.strong_times(x.vpowf(p - T::one())))
    }

    /// `x^n` by repeated multiplication.
    #[inline]
    pub fn powi<T: Element>(x: T, n: i32) -> T {
        x.powi(n)
    }

    /// `d` through `powi`: `d·n·x^(n-1)`, and 0 for `n = 0`.
    #[inline]
    pub fn powi_d<T: Element>(d: T, x: T, n: i32) -> T {
        let local = match n.checked_sub(1) {
            _ if n == 0 => T::zero(),
            Some(m) => T::from_f64(n.into()) * x.powi(m),
            None => T::from_f64(n.into()) * x.powi(n) / x,
        };
        strong_mul(d, local)
    }
}

/// The scalar value a unary rule reads, wrapped as its scalar derivative takes it.
macro_rules! reads {
    (x, $v:expr) => {
        scalar::Input($v)
    };
    (y, $v:expr) => {
        scalar::Output($v)
    };
}

macro_rules! forward_methods {
    ($($name:ident, $jvp:ident, $vjp:ident, reads $reads:ident, $reference:literal, $doc:literal;)*) => {
        impl<T: Element> Tensor<T> {
            $(
                #[doc = $doc]
                #[must_use]
                pub fn $name(&self) -> Tensor<T> {
                    self.map_elems_in(
                        #[inline(always)]
                        |&v, k| scalar::$name::value_in(v, k),
                    )
                }
            )*
        }
    };
}
rune_ops::for_each_unary!(forward_methods);

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
        self.map_elems(|&x| elementwise::clamp(x, lo, hi))
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
        self.map_elems(
            #[inline(always)]
            |&x| elementwise::powf(x, p),
        )
    }
}

impl<T: Element> Tensor<T> {
    /// `x^n` for a constant integer exponent `n`, by repeated multiplication (exact for small
    /// `n`, defined for negative bases; `x^0 = 1`, also for `x = 0`).
    #[must_use]
    pub fn powi(&self, n: i32) -> Tensor<T> {
        self.map_elems(
            #[inline(always)]
            |&x| elementwise::powi(x, n),
        )
    }
}

// ---- rules ----------------------------------------------------------------------------------
//
// The functions of the registry's table take their derivative from `crate::scalar`, reading `x`
// or `y` as the table says; `clamp` is a gate (`lo <= x <= hi`) and `powf` reads `x`
// (`p·x^(p-1)`, 0 if `p = 0`). JVP and VJP of an elementwise op are the same product: tangent or
// cotangent times the local derivative.

/// Rules of the unary ops (see the module's table).
pub mod rules {
    use super::*;

    macro_rules! rule_fns {
        ($($name:ident, $jvp:ident, $vjp:ident, reads $reads:ident, $reference:literal, $doc:literal;)*) => {$(
            #[doc = concat!("JVP of [`Tensor::", stringify!($name), "`], from ",
                rule_fns!(@reads $reads), " and the input tangent `dx`.")]
            ///
            /// # Panics
            /// When the two shapes differ.
            #[track_caller]
            #[must_use]
            pub fn $jvp<T: Element>($reads: &Tensor<T>, dx: &Tensor<T>) -> Tensor<T> {
                pair_in(stringify!($jvp), dx, $reads, #[inline(always)] |d, p, k| {
                    scalar::$name::tangent_in(d, reads!($reads, p), k)
                })
            }

            #[doc = concat!("VJP of [`Tensor::", stringify!($name), "`]: the cotangent `g` \
                pulled back to the input, from ", rule_fns!(@reads $reads), ".")]
            ///
            /// # Panics
            /// When the two shapes differ.
            #[track_caller]
            #[must_use]
            pub fn $vjp<T: Element>(g: &Tensor<T>, $reads: &Tensor<T>) -> Tensor<T> {
                pair_in(stringify!($vjp), g, $reads, #[inline(always)] |d, p, k| {
                    scalar::$name::tangent_in(d, reads!($reads, p), k)
                })
            }
        )*};
        (@reads x) => { "the input `x`" };
        (@reads y) => { "the output `y`" };
    }
    rune_ops::for_each_unary!(rule_fns);

    /// JVP of [`Tensor::clamp`], from the input `x`: `dx` where `lo <= x <= hi`, else 0.
    ///
    /// # Panics
    /// When the two shapes differ.
    #[track_caller]
    #[must_use]
    pub fn clamp_jvp<T: Element>(x: &Tensor<T>, lo: T, hi: T, dx: &Tensor<T>) -> Tensor<T> {
        pair("clamp_jvp", dx, x, |d, x| {
            elementwise::clamp_d(d, x, lo, hi)
        })
    }

    /// VJP of [`Tensor::clamp`], from the input `x`: `g` where `lo <= x <= hi`, else 0.
    ///
    /// # Panics
    /// When the two shapes differ.
    #[track_caller]
    #[must_use]
    pub fn clamp_vjp<T: Element>(g: &Tensor<T>, x: &Tensor<T>, lo: T, hi: T) -> Tensor<T> {
        pair("clamp_vjp", g, x, |d, x| elementwise::clamp_d(d, x, lo, hi))
    }

    /// JVP of [`Tensor::powf`], from the input `x`: `dx · p·x^(p-1)`.
    ///
    /// # Panics
    /// When the two shapes differ.
    #[track_caller]
    #[must_use]
    pub fn powf_jvp<T: Element>(x: &Tensor<T>, p: T, dx: &Tensor<T>) -> Tensor<T> {
        pair("powf_jvp", dx, x, |d, x| elementwise::powf_d(d, x, p))
    }

    /// JVP of [`Tensor::powi`], from the input `x`: `dx · n·x^(n-1)` (0 for `n = 0`).
    ///
    /// # Panics
    /// When the two shapes differ.
    #[track_caller]
    #[must_use]
    pub fn powi_jvp<T: Element>(x: &Tensor<T>, n: i32, dx: &Tensor<T>) -> Tensor<T> {
        pair("powi_jvp", dx, x, |d, x| elementwise::powi_d(d, x, n))
    }

    /// VJP of [`Tensor::powi`], from the input `x`: `g · n·x^(n-1)` (0 for `n = 0`).
    ///
    /// # Panics
    /// When the two shapes differ.
    #[track_caller]
    #[must_use]
    pub fn powi_vjp<T: Element>(g: &Tensor<T>, x: &Tensor<T>, n: i32) -> Tensor<T> {
        pair("powi_vjp", g, x, |d, x| elementwise::powi_d(d, x, n))
    }

    /// VJP of [`Tensor::powf`], from the input `x`: `g · p·x^(p-1)`.
    ///
    /// # Panics
    /// When the two shapes differ.
    #[track_caller]
    #[must_use]
    pub fn powf_vjp<T: Element>(g: &Tensor<T>, x: &Tensor<T>, p: T) -> Tensor<T> {
        pair("powf_vjp", g, x, |d, x| elementwise::powf_d(d, x, p))
    }
}
