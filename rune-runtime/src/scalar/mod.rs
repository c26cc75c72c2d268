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
//! use rune_runtime::__private::scalar::{tanh, Output};
//! let _ = tanh::tangent(1.0_f64, Output(0.5));
//! ```
//!
//! ```
//! use rune_runtime::__private::scalar::{tanh, Input};
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

/// `2/√π`.
fn two_over_sqrt_pi<T: Element>() -> T {
    T::from_f64(std::f64::consts::FRAC_2_SQRT_PI)
}

/// `(1 - x)(1 + x)`, accurate near `|x| = 1` where `1 - x²` is not.
fn one_minus_square<T: Element>(x: T) -> T {
    (T::one() - x) * (T::one() + x)
}

mod activation;
mod algebraic;
mod exp_log;
mod hyperbolic;
mod methods;
mod rounding;
mod special;
mod trig;

pub use activation::{gelu, gelu_tanh, log_sigmoid, relu, sigmoid, silu, softplus};
pub use algebraic::{abs, cbrt, recip, sqrt, square};
pub use exp_log::{exp, exp2, expm1, ln, log1p, log2};
pub use hyperbolic::{acosh, asinh, atanh, cosh, sinh, tanh};
pub use methods::NumberMethods;
pub use rounding::{ceil, floor, round, round_ties_even, sign, signum};
pub use special::{digamma, erf, erfc, erfinv, lgamma};
pub use trig::{acos, asin, atan, cos, sin, tan};
