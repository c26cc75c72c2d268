//! The elementwise functions of one tensor as scalar functions, each with its derivative: the one
//! place where `d/dx tanh` and its like are written.
//!
//! The tensor kernels and rules of [`crate::ops::unary`] apply these element by element, and the
//! forward-mode dual numbers ([`Dual`](crate::Dual)) take their tangents from them, so the two
//! modes cannot disagree. Each function is a module with `value(x)` and `derivative(at)`, where
//! `at` is an [`Input`] (the derivative is computed from `x`) or an [`Output`] (from `y =
//! value(x)`), as the op registry's entry says (`rune_ops::for_each_unary!`): an entry that
//! names the other one does not compile. `value_in(x, kernels)` and `tangent_in(d, at,
//! kernels)` are the same in a pass of an elementwise loop with [`Kernels`]: `sin`, `cos` and
//! `tan` take the fast `f32` kernels in a fast pass, every other function ignores the pass.
//!
//! A derivative computed from a rounded output loses its relative precision where the output
//! saturates: `1 - tanh(x)²` is `0` in `f32` from `|x| ≈ 9` on, where the exact value is about
//! `6e-8`. `tanh` and `sigmoid` therefore read their input, as `exp(-2|x|)` and `exp(-|x|)`,
//! which keep full relative precision for every `x` and neither overflow nor divide by zero.
//!
//! The types check the registry: `tanh`'s derivative reads its input, so a table entry that
//! said `reads y` would pass the output, and that does not compile:
//!
//! ```compile_fail,E0308
//! use rune_runtime::scalar::{tanh, Output};
//! let _ = tanh::tangent(1.0_f64, Output(0.5));
//! ```
//!
//! ```
//! use rune_runtime::scalar::{tanh, Input};
//! // d/dx tanh at 20 is 4e^-40 (to double precision), where 1 - tanh(20)² is exactly 0.
//! let d = tanh::derivative(Input(20.0_f64));
//! assert!((d - 4.0 * (-40.0_f64).exp()).abs() <= 1e-15 * d);
//! assert_eq!(1.0 - 20.0_f64.tanh().powi(2), 0.0);
//! ```

use num_traits::Float;

use crate::element::{strong_mul, Element};
use crate::vmath::Kernels;

/// The derivative is computed from the input `x`.
#[derive(Clone, Copy, Debug)]
pub struct Input<T>(pub T);

/// The derivative is computed from the output `y`.
#[derive(Clone, Copy, Debug)]
pub struct Output<T>(pub T);

/// Where a derivative is read from, given both the input and the output.
pub trait At<T>: Copy {
    /// The input `x` or the output `y`, whichever this reads.
    fn at(x: T, y: T) -> Self;
}

impl<T: Copy> At<T> for Input<T> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn at(x: T, _: T) -> Self {
        Input(x)
    }
}

impl<T: Copy> At<T> for Output<T> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn at(_: T, y: T) -> Self {
        Output(y)
    }
}

/// `tangent(d, at)`: a tangent or cotangent `d` through a function, `d` times the derivative, a
/// zero `d` staying zero where the derivative is infinite (every function but the gate `relu`).
macro_rules! chain_rule {
    ($at:ident) => {
        /// A tangent or cotangent `d` through the function: `d` times the derivative, a zero `d`
        /// staying zero where the derivative is infinite.
        #[cfg_attr(debug_assertions, inline)]
        #[cfg_attr(not(debug_assertions), inline(always))]
        pub fn tangent<T: Element>(d: T, at: $at<T>) -> T {
            strong_mul(d, derivative(at))
        }

        same_in_every_pass!($at);
    };
}

/// `value_in` and `tangent_in` of a function whose kernels have no fast form: `value` and
/// `tangent`, whichever pass of a loop ([`Kernels`]) runs them.
macro_rules! same_in_every_pass {
    ($at:ident) => {
        /// The function, in a pass of a loop with `kernels` (the same in every pass).
        #[cfg_attr(debug_assertions, inline)]
        #[cfg_attr(not(debug_assertions), inline(always))]
        pub fn value_in<T: Element>(x: T, kernels: &Kernels) -> T {
            let _ = kernels;
            value(x)
        }

        /// [`tangent`], in a pass of a loop with `kernels` (the same in every pass).
        #[cfg_attr(debug_assertions, inline)]
        #[cfg_attr(not(debug_assertions), inline(always))]
        pub fn tangent_in<T: Element>(d: T, at: $at<T>, kernels: &Kernels) -> T {
            let _ = kernels;
            tangent(d, at)
        }
    };
}

fn ln_2<T: Element>() -> T {
    T::from_f64(std::f64::consts::LN_2)
}

/// `e^x`; the derivative is `y`.
pub mod exp {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.vexp()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Output(y): Output<T>) -> T {
        y
    }

    chain_rule!(Output);
}
/// The natural logarithm; the derivative is `1/x`.
pub mod ln {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.vln()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        x.recip()
    }

    chain_rule!(Input);
}
/// The base-2 logarithm; the derivative is `1/(x ln 2)`.
pub mod log2 {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.log2()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        (x * ln_2::<T>()).recip()
    }

    chain_rule!(Input);
}
/// `2^x`; the derivative is `y ln 2`.
pub mod exp2 {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.exp2()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Output(y): Output<T>) -> T {
        y * ln_2::<T>()
    }

    chain_rule!(Output);
}
/// `ln(1 + x)`; the derivative is `1/(1 + x)`.
pub mod log1p {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.vln_1p()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        (T::one() + x).recip()
    }

    chain_rule!(Input);
}
/// The sine; the derivative is `cos x`.
pub mod sin {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.vsin()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        x.vcos()
    }

    /// A tangent or cotangent `d` through the function: `d` times the derivative, a zero `d`
    /// staying zero where the derivative is infinite.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn tangent<T: Element>(d: T, at: Input<T>) -> T {
        strong_mul(d, derivative(at))
    }

    /// The function, in a pass of a loop with `kernels`: the fast `f32` form in a fast pass
    /// (see [`Kernels`]).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value_in<T: Element>(x: T, kernels: &Kernels) -> T {
        x.vsin_in(kernels)
    }

    /// [`tangent`], in a pass of a loop with `kernels`.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn tangent_in<T: Element>(d: T, Input(x): Input<T>, kernels: &Kernels) -> T {
        strong_mul(d, x.vcos_in(kernels))
    }
}
/// The cosine; the derivative is `-sin x`.
pub mod cos {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.vcos()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        -x.vsin()
    }

    /// A tangent or cotangent `d` through the function: `d` times the derivative, a zero `d`
    /// staying zero where the derivative is infinite.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn tangent<T: Element>(d: T, at: Input<T>) -> T {
        strong_mul(d, derivative(at))
    }

    /// The function, in a pass of a loop with `kernels`: the fast `f32` form in a fast pass
    /// (see [`Kernels`]).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value_in<T: Element>(x: T, kernels: &Kernels) -> T {
        x.vcos_in(kernels)
    }

    /// [`tangent`], in a pass of a loop with `kernels`.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn tangent_in<T: Element>(d: T, Input(x): Input<T>, kernels: &Kernels) -> T {
        strong_mul(d, -x.vsin_in(kernels))
    }
}
/// The tangent; the derivative is `1 + y²`.
pub mod tan {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.vtan()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Output(y): Output<T>) -> T {
        T::one() + y * y
    }

    /// A tangent or cotangent `d` through the function: `d` times the derivative, a zero `d`
    /// staying zero where the derivative is infinite.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn tangent<T: Element>(d: T, at: Output<T>) -> T {
        strong_mul(d, derivative(at))
    }

    /// The function, in a pass of a loop with `kernels`: the fast `f32` form in a fast pass
    /// (see [`Kernels`]).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value_in<T: Element>(x: T, kernels: &Kernels) -> T {
        x.vtan_in(kernels)
    }

    /// [`tangent`], in a pass of a loop with `kernels` (the same in every pass: the derivative
    /// reads the output).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn tangent_in<T: Element>(d: T, at: Output<T>, kernels: &Kernels) -> T {
        let _ = kernels;
        tangent(d, at)
    }
}
/// The hyperbolic tangent; the derivative is `1 - tanh(x)² = 4e / (1 + e)²` with `e = e^(-2|x|)`,
/// computed from `x` so that it keeps its relative precision where `tanh` rounds to `±1`.
pub mod tanh {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.vtanh()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        let e = (-(x.abs() + x.abs())).vexp();
        let d = T::one() + e;
        (e + e + e + e) / (d * d)
    }

    chain_rule!(Input);
}
/// The logistic function `1 / (1 + e^-x)`, evaluated as `e^x / (1 + e^x)` below 0 so that it
/// neither overflows nor loses relative precision; the derivative is `y(1 - y) = e / (1 + e)²`
/// with `e = e^(-|x|)`, computed from `x` so that it keeps its relative precision where the
/// output rounds to 1.
pub mod sigmoid {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        // One exponential, `e^(-|x|)`, for both sides. `-|x|` is written as the side's own
        // smooth formula (`-x` from 0 up, `x` below) so that a dual number differentiates each
        // side as written, also at 0, where `abs` has the derivative 0 of its kink.
        let e = (if x >= T::zero() { -x } else { x }).vexp();
        if x >= T::zero() {
            T::one() / (T::one() + e)
        } else {
            e / (T::one() + e)
        }
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        let e = (-x.abs()).vexp();
        let d = T::one() + e;
        e / (d * d)
    }

    chain_rule!(Input);
}
/// `max(x, 0)`, NaN kept; the derivative is a gate: `1` for `x > 0`, else `0` (also at 0).
pub mod relu {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        if x <= T::zero() {
            T::zero()
        } else {
            x
        }
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        if x > T::zero() {
            T::one()
        } else {
            T::zero()
        }
    }

    /// A tangent or cotangent `d` through the function: `d` where the gate is open, else `0`.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn tangent<T: Element>(d: T, Input(x): Input<T>) -> T {
        if x > T::zero() {
            d
        } else {
            T::zero()
        }
    }

    same_in_every_pass!(Input);
}
/// The square root; the derivative is `1/(2y)`.
pub mod sqrt {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.sqrt()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Output(y): Output<T>) -> T {
        (y + y).recip()
    }

    chain_rule!(Output);
}
/// `1 / x`; the derivative is `-y²`.
pub mod recip {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.recip()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Output(y): Output<T>) -> T {
        -(y * y)
    }

    chain_rule!(Output);
}
/// `|x|`; the derivative is `sign x`, `0` at 0 (the subgradient PyTorch picks), NaN kept.
pub mod abs {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.abs()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
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

    chain_rule!(Input);
}
/// `x * x`; the derivative is `2x`.
pub mod square {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x * x
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        x + x
    }

    chain_rule!(Input);
}

/// `ln(1 + e^x)`, evaluated as `x + ln(1 + e^-x)` above 0 and `ln(1 + e^x)` otherwise, so that it
/// neither overflows for large `x` nor loses relative precision for very negative `x` (where it
/// is about `e^x`); the derivative is `sigmoid(x)`, `1/2` at 0. Each branch is smooth, so dual
/// numbers differentiate it exactly at 0 too, where `max(x, 0) + ln(1 + e^-|x|)` has a kink
/// in each term.
pub mod softplus {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        if x > T::zero() {
            x + (-x).vexp().vln_1p()
        } else {
            x.vexp().vln_1p()
        }
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        sigmoid::value(x)
    }

    chain_rule!(Input);
}

/// `e^x - 1`, accurate for small `x`; the derivative is `e^x`, read from `x` so that it keeps
/// its relative precision where `y` rounds to `-1`.
pub mod expm1 {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.vexp_m1()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        x.vexp()
    }

    chain_rule!(Input);
}

/// `2/√π`.
fn two_over_sqrt_pi<T: Element>() -> T {
    T::from_f64(std::f64::consts::FRAC_2_SQRT_PI)
}

/// The error function; the derivative is `2/√π e^(-x²)`.
pub mod erf {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Element::erf(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        two_over_sqrt_pi::<T>() * (-(x * x)).vexp()
    }

    chain_rule!(Input);
}

/// The complementary error function `1 - erf(x)`, accurate for large `x`; the derivative is
/// `-2/√π e^(-x²)`.
pub mod erfc {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Element::erfc(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        -(two_over_sqrt_pi::<T>() * (-(x * x)).vexp())
    }

    chain_rule!(Input);
}

/// The inverse error function on `[-1, 1]`; the derivative is `√π/2 e^(y²)`.
pub mod erfinv {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Element::erfinv(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Output(y): Output<T>) -> T {
        (y * y).vexp() / two_over_sqrt_pi::<T>()
    }

    chain_rule!(Output);
}

/// `ln |Γ(x)|`; the derivative is the digamma function `ψ(x)`.
pub mod lgamma {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Element::ln_gamma(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        Element::polygamma(x, 0)
    }

    chain_rule!(Input);
}

/// The digamma function `ψ(x) = Γ'(x)/Γ(x)`; the derivative is the trigamma function `ψ'(x)`.
pub mod digamma {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Element::polygamma(x, 0)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        Element::polygamma(x, 1)
    }

    chain_rule!(Input);
}

/// `ln sigmoid(x) = -softplus(-x)`, evaluated as `x - ln(1 + e^x)` below 0 and `-ln(1 + e^-x)`
/// otherwise, so that it neither overflows nor loses precision for large `|x|`; the derivative
/// is `sigmoid(-x)`.
pub mod log_sigmoid {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        if x < T::zero() {
            x - x.vexp().vln_1p()
        } else {
            -(-x).vexp().vln_1p()
        }
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        sigmoid::value(-x)
    }

    chain_rule!(Input);
}

/// The hyperbolic sine; the derivative is `cosh x`.
pub mod sinh {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::sinh(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        Float::cosh(x)
    }

    chain_rule!(Input);
}

/// The hyperbolic cosine; the derivative is `sinh x`.
pub mod cosh {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::cosh(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        Float::sinh(x)
    }

    chain_rule!(Input);
}

/// The inverse hyperbolic sine; the derivative is `1 / √(x² + 1)`, written `1 / hypot(x, 1)` so
/// that it does not overflow for large `x`.
pub mod asinh {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::asinh(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        Float::hypot(x, T::one()).recip()
    }

    chain_rule!(Input);
}

/// The inverse hyperbolic cosine on `[1, ∞)`; the derivative is `1 / (√(x - 1) √(x + 1))`
/// (infinite at 1, no overflow for large `x`).
pub mod acosh {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::acosh(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        ((x - T::one()).sqrt() * (x + T::one()).sqrt()).recip()
    }

    chain_rule!(Input);
}

/// `(1 - x)(1 + x)`, accurate near `|x| = 1` where `1 - x²` is not.
fn one_minus_square<T: Element>(x: T) -> T {
    (T::one() - x) * (T::one() + x)
}

/// The inverse hyperbolic tangent on `(-1, 1)`; the derivative is `1 / ((1 - x)(1 + x))`.
pub mod atanh {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::atanh(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        one_minus_square(x).recip()
    }

    chain_rule!(Input);
}

/// The inverse sine on `[-1, 1]`; the derivative is `1 / √((1 - x)(1 + x))`.
pub mod asin {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::asin(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        one_minus_square(x).sqrt().recip()
    }

    chain_rule!(Input);
}

/// The inverse cosine on `[-1, 1]`; the derivative is `-1 / √((1 - x)(1 + x))`.
pub mod acos {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::acos(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        -one_minus_square(x).sqrt().recip()
    }

    chain_rule!(Input);
}

/// The inverse tangent; the derivative is `1 / (1 + x²)`, written `r² / (1 + r²)` with `r = 1/x`
/// for `|x| > 1` so that `x²` does not overflow.
pub mod atan {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::atan(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        if x.abs() > T::one() {
            let r = x.recip();
            let r2 = r * r;
            r2 / (T::one() + r2)
        } else {
            (T::one() + x * x).recip()
        }
    }

    chain_rule!(Input);
}

/// The derivative of a piecewise-constant function: zero for every tangent, even an infinite
/// or NaN one (as JAX's `stop_gradient`-like rules of `sign`, `floor` and `round`).
macro_rules! zero_derivative {
    () => {
        /// Its derivative, zero.
        #[inline]
        pub fn derivative<T: Element>(Input(_): Input<T>) -> T {
            T::zero()
        }

        /// A tangent or cotangent through the function: zero.
        #[inline]
        pub fn tangent<T: Element>(_d: T, Input(_): Input<T>) -> T {
            T::zero()
        }

        same_in_every_pass!(Input);
    };
}

/// The sign: `-1`, `0` or `1` (NaN kept, `sign(-0) = 0`, as NumPy); the derivative is zero.
pub mod sign {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
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

    zero_derivative!();
}

/// The largest integer not above `x`; the derivative is zero.
pub mod floor {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::floor(x)
    }

    zero_derivative!();
}

/// The smallest integer not below `x`; the derivative is zero.
pub mod ceil {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::ceil(x)
    }

    zero_derivative!();
}

/// The nearest integer, halves to even (as NumPy, JAX and PyTorch: `round(2.5) = 2`); the
/// derivative is zero.
pub mod round {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        let r = Float::round(x);
        let half = T::from_f64(0.5);
        if (r - x).abs() == half {
            // A tie, which `Float::round` takes away from zero: `x / 2` is exact, and rounding
            // it gives the even neighbour's half.
            let h = Float::round(x * half);
            h + h
        } else {
            r
        }
    }

    zero_derivative!();
}
