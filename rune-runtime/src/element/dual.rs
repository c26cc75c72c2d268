//! Forward-mode dual numbers: `re + du·ε` with `ε² = 0`.
//!
//! Evaluating a function on `x + 1·ε` gives `f(x) + f'(x)·ε`: the tangent part `du` carries the
//! derivative through every operation by the chain rule, with no tape. A `Tensor<Dual<T>>` whose
//! tangent parts hold a direction `v` gives the directional derivative of any tensor code.
//!
//! [`Dual`] is itself an [`Element`], so it nests: in `Dual<Dual<f64>>` the inner and outer
//! tangents are two independent infinitesimals `ε₁, ε₂`, and the `ε₁ε₂` coefficient of
//! `f(x + ε₁ + ε₂)` is the second derivative; `k` levels give the `k`-th derivative.
//!
//! A tangent that is exactly zero stays exactly zero through every operation, even where the
//! local derivative is infinite or NaN (as [`strong_mul`] does for the rules): a constant
//! `Dual::constant(0.0).sqrt()` has tangent `0`, not `0 · ∞ = NaN`.
//!
//! ```
//! use num_traits::{Float, One};
//! use rune_runtime::Dual;
//!
//! // d/dx sin(x²) = 2x cos(x²)
//! let x = Dual::variable(1.5_f64);
//! let y = (x * x).sin();
//! assert!((y.du - 3.0 * 2.25_f64.cos()).abs() < 1e-12);
//!
//! // Second derivative of x³ at 2 (6x = 12): the tangent of the tangent.
//! let x = Dual::new(Dual::variable(2.0_f64), Dual::one());
//! assert_eq!((x * x * x).du.du, 12.0);
//! ```

use std::cmp::Ordering;
use std::fmt;
use std::iter::{Product, Sum};
use std::num::FpCategory;
use std::ops::{
    Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, RemAssign, Sub, SubAssign,
};

use ndarray::ScalarOperand;
use num_traits::{Float, Num, NumCast, One, ToPrimitive, Zero};

mod products;

use super::operand::{Operand, OperandOf, OperandRef};
use super::residual::Residual;
use super::{strong_mul, Element, FromScalar, Scalar};
use crate::gemm::GemmKernel;
use crate::scalar::{self, At, Input, Output};
use crate::vmath::Kernels;

/// A dual number `re + du·ε` (`ε² = 0`): a primal value and its tangent.
///
/// Comparisons (`==`, `<`, `max`, ...) and classification (`is_nan`, ...) look at the primal part
/// only, so code that branches on values (`relu`, `max`, `clamp`, `where`) takes the branch the
/// primal computation takes and differentiates that branch, as forward-mode AD must. Use
/// [`Element::is_exact_zero`] or compare the fields to test both parts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dual<T> {
    /// The primal (real) part.
    pub re: T,
    /// The tangent (infinitesimal) part.
    pub du: T,
}

impl<T: Element> Dual<T> {
    /// `re + du·ε`.
    #[inline]
    pub fn new(re: T, du: T) -> Self {
        Dual { re, du }
    }

    /// A constant: tangent zero.
    #[inline]
    pub fn constant(re: T) -> Self {
        Dual::new(re, T::zero())
    }

    /// The variable being differentiated against: tangent one.
    #[inline]
    pub fn variable(re: T) -> Self {
        Dual::new(re, T::one())
    }

    /// `f(re) + du·d·ε` for a local derivative `d` (a zero tangent stays zero).
    #[inline]
    fn chain(self, value: T, d: T) -> Self {
        Dual::new(value, strong_mul(self.du, d))
    }

    /// `value(re)` with the tangent `tangent(du, at)` of a function of [`crate::scalar`], where
    /// `at` is the input or the output, as the function's derivative reads.
    #[inline]
    fn apply<R: At<T>>(self, value: fn(T) -> T, tangent: fn(T, R) -> T) -> Self {
        let y = value(self.re);
        Dual::new(y, tangent(self.du, R::at(self.re, y)))
    }

    /// `f(re) + (du / d)·ε` (a zero tangent stays zero, even for `d = 0`).
    #[inline]
    fn chain_div(self, value: T, d: T) -> Self {
        Dual::new(value, strong_div(self.du, d))
    }
}

/// `n / d`, zero when `n` is exactly zero.
#[inline]
fn strong_div<T: Element>(n: T, d: T) -> T {
    if n.is_exact_zero() {
        T::zero()
    } else {
        n / d
    }
}

// ---- arithmetic -----------------------------------------------------------------------------

impl<T: Element> Add for Dual<T> {
    type Output = Self;
    #[inline]
    fn add(self, o: Self) -> Self {
        Dual::new(self.re + o.re, self.du + o.du)
    }
}

impl<T: Element> Sub for Dual<T> {
    type Output = Self;
    #[inline]
    fn sub(self, o: Self) -> Self {
        Dual::new(self.re - o.re, self.du - o.du)
    }
}

impl<T: Element> Mul for Dual<T> {
    type Output = Self;
    #[inline]
    fn mul(self, o: Self) -> Self {
        Dual::new(
            self.re * o.re,
            strong_mul(self.du, o.re) + strong_mul(o.du, self.re),
        )
    }
}

impl<T: Element> Div for Dual<T> {
    type Output = Self;
    /// `(a/b)' = (a' - (a/b)·b') / b`.
    #[inline]
    fn div(self, o: Self) -> Self {
        let q = self.re / o.re;
        Dual::new(q, strong_div(self.du - strong_mul(o.du, q), o.re))
    }
}

impl<T: Element> Rem for Dual<T> {
    type Output = Self;
    /// `a % b = a - b·trunc(a/b)`, so the tangent is `a' - b'·trunc(a/b)`.
    #[inline]
    fn rem(self, o: Self) -> Self {
        Dual::new(
            self.re % o.re,
            self.du - strong_mul(o.du, (self.re / o.re).trunc()),
        )
    }
}

impl<T: Element> Neg for Dual<T> {
    type Output = Self;
    #[inline]
    fn neg(self) -> Self {
        Dual::new(-self.re, -self.du)
    }
}

macro_rules! assign_ops {
    ($($trait:ident, $method:ident, $op:tt;)*) => {$(
        impl<T: Element> $trait for Dual<T> {
            #[inline]
            fn $method(&mut self, o: Self) {
                *self = *self $op o;
            }
        }
    )*};
}
assign_ops! {
    AddAssign, add_assign, +;
    SubAssign, sub_assign, -;
    MulAssign, mul_assign, *;
    DivAssign, div_assign, /;
    RemAssign, rem_assign, %;
}

impl<T: Element> Sum for Dual<T> {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::zero(), Add::add)
    }
}

impl<'a, T: Element> Sum<&'a Dual<T>> for Dual<T> {
    fn sum<I: Iterator<Item = &'a Self>>(iter: I) -> Self {
        iter.copied().sum()
    }
}

impl<T: Element> Product for Dual<T> {
    fn product<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::one(), Mul::mul)
    }
}

impl<'a, T: Element> Product<&'a Dual<T>> for Dual<T> {
    fn product<I: Iterator<Item = &'a Self>>(iter: I) -> Self {
        iter.copied().product()
    }
}

// ---- comparisons: on the primal part ----------------------------------------------------------

/// Equal primal parts (see the type's docs for why the tangent is ignored).
impl<T: Element> PartialEq for Dual<T> {
    #[inline]
    fn eq(&self, o: &Self) -> bool {
        self.re == o.re
    }
}

/// Ordered by the primal part (see the type's docs for why the tangent is ignored).
impl<T: Element> PartialOrd for Dual<T> {
    #[inline]
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        self.re.partial_cmp(&o.re)
    }
}

/// A dual number against a real one, on the primal part: the branches of a function of numbers
/// (`if u > 0.0`) run on dual numbers in its `f_hvp`.
macro_rules! real_comparisons {
    ($($t:ty)*) => {$(
        impl PartialEq<$t> for Dual<$t> {
            #[inline]
            fn eq(&self, o: &$t) -> bool {
                self.re == *o
            }
        }
        impl PartialOrd<$t> for Dual<$t> {
            #[inline]
            fn partial_cmp(&self, o: &$t) -> Option<Ordering> {
                self.re.partial_cmp(o)
            }
        }
        impl PartialEq<Dual<$t>> for $t {
            #[inline]
            fn eq(&self, o: &Dual<$t>) -> bool {
                *self == o.re
            }
        }
        impl PartialOrd<Dual<$t>> for $t {
            #[inline]
            fn partial_cmp(&self, o: &Dual<$t>) -> Option<Ordering> {
                self.partial_cmp(&o.re)
            }
        }
    )*};
}
real_comparisons!(f32 f64);

// ---- num-traits -----------------------------------------------------------------------------

impl<T: Element> Zero for Dual<T> {
    #[inline]
    fn zero() -> Self {
        Dual::new(T::zero(), T::zero())
    }
    /// True only when both parts are zero (the additive identity), so code that skips zeros
    /// never drops a tangent.
    #[inline]
    fn is_zero(&self) -> bool {
        self.re.is_zero() && self.du.is_zero()
    }
}

impl<T: Element> One for Dual<T> {
    #[inline]
    fn one() -> Self {
        Dual::constant(T::one())
    }
    /// True only for `1 + 0·ε`, the multiplicative identity.
    #[inline]
    fn is_one(&self) -> bool {
        self.re.is_one() && self.du.is_zero()
    }
}

impl<T: Element> Num for Dual<T> {
    type FromStrRadixErr = T::FromStrRadixErr;
    /// Parses a constant.
    fn from_str_radix(s: &str, radix: u32) -> Result<Self, Self::FromStrRadixErr> {
        T::from_str_radix(s, radix).map(Dual::constant)
    }
}

macro_rules! to_primitive {
    ($($method:ident -> $t:ty;)*) => {$(
        #[inline]
        fn $method(&self) -> Option<$t> {
            self.re.$method()
        }
    )*};
}

/// Converts the primal part.
impl<T: Element> ToPrimitive for Dual<T> {
    to_primitive! {
        to_isize -> isize;
        to_i8 -> i8;
        to_i16 -> i16;
        to_i32 -> i32;
        to_i64 -> i64;
        to_i128 -> i128;
        to_usize -> usize;
        to_u8 -> u8;
        to_u16 -> u16;
        to_u32 -> u32;
        to_u64 -> u64;
        to_u128 -> u128;
        to_f32 -> f32;
        to_f64 -> f64;
    }
}

/// Converts to a constant.
impl<T: Element> NumCast for Dual<T> {
    #[inline]
    fn from<N: ToPrimitive>(n: N) -> Option<Self> {
        <T as NumCast>::from(n).map(Dual::constant)
    }
}

impl<T: Element> Float for Dual<T> {
    #[inline]
    fn nan() -> Self {
        Dual::constant(T::nan())
    }
    #[inline]
    fn infinity() -> Self {
        Dual::constant(T::infinity())
    }
    #[inline]
    fn neg_infinity() -> Self {
        Dual::constant(T::neg_infinity())
    }
    #[inline]
    fn neg_zero() -> Self {
        Dual::constant(T::neg_zero())
    }
    #[inline]
    fn min_value() -> Self {
        Dual::constant(T::min_value())
    }
    #[inline]
    fn min_positive_value() -> Self {
        Dual::constant(T::min_positive_value())
    }
    #[inline]
    fn epsilon() -> Self {
        Dual::constant(T::epsilon())
    }
    #[inline]
    fn max_value() -> Self {
        Dual::constant(T::max_value())
    }

    #[inline]
    fn is_nan(self) -> bool {
        self.re.is_nan()
    }
    #[inline]
    fn is_infinite(self) -> bool {
        self.re.is_infinite()
    }
    #[inline]
    fn is_finite(self) -> bool {
        self.re.is_finite()
    }
    #[inline]
    fn is_normal(self) -> bool {
        self.re.is_normal()
    }
    #[inline]
    fn is_subnormal(self) -> bool {
        self.re.is_subnormal()
    }
    #[inline]
    fn classify(self) -> FpCategory {
        self.re.classify()
    }
    #[inline]
    fn is_sign_positive(self) -> bool {
        self.re.is_sign_positive()
    }
    #[inline]
    fn is_sign_negative(self) -> bool {
        self.re.is_sign_negative()
    }
    #[inline]
    fn integer_decode(self) -> (u64, i16, i8) {
        self.re.integer_decode()
    }

    // Piecewise constant: derivative zero.
    #[inline]
    fn floor(self) -> Self {
        Dual::constant(self.re.floor())
    }
    #[inline]
    fn ceil(self) -> Self {
        Dual::constant(self.re.ceil())
    }
    #[inline]
    fn round(self) -> Self {
        Dual::constant(self.re.round())
    }
    #[inline]
    fn trunc(self) -> Self {
        Dual::constant(self.re.trunc())
    }
    #[inline]
    fn signum(self) -> Self {
        Dual::constant(self.re.signum())
    }
    /// `x - trunc(x)`: derivative one.
    #[inline]
    fn fract(self) -> Self {
        Dual::new(self.re.fract(), self.du)
    }
    /// Derivative `+1` for `x >= 0` (including `x = 0`, as JAX), `-1` below.
    ///
    /// Unlike the other functions of the op registry this does not take its derivative from
    /// [`scalar::abs`], whose `abs'(0) = 0` is PyTorch's subgradient: `Float::abs` on a dual
    /// number is also what `Float` code outside the tensor ops calls, and keeps JAX's convention.
    #[inline]
    fn abs(self) -> Self {
        // The registry's derivative, `0` at the kink as the rules have it.
        self.apply(scalar::abs::value, scalar::abs::tangent)
    }

    #[inline]
    fn mul_add(self, a: Self, b: Self) -> Self {
        Dual::new(
            self.re.mul_add(a.re, b.re),
            strong_mul(self.du, a.re) + strong_mul(a.du, self.re) + b.du,
        )
    }
    #[inline]
    fn recip(self) -> Self {
        self.apply(scalar::recip::value, scalar::recip::tangent)
    }
    /// `n·x^(n-1)`; for `n = 0` the constant one.
    #[inline]
    fn powi(self, n: i32) -> Self {
        if n == 0 {
            return Self::one();
        }
        let prev = n
            .checked_sub(1)
            .map_or_else(|| self.re.powi(n) / self.re, |m| self.re.powi(m));
        self.chain(self.re.powi(n), T::from_f64(n.into()) * prev)
    }
    /// `x^p`: `p·x^(p-1)·dx + x^p·ln(x)·dp`, where, as in JAX, the first term is zero for
    /// `p = 0` and the second zero for `x = 0`. A constant exponent never evaluates `ln(x)`, so
    /// negative bases with constant integer exponents have finite derivatives.
    fn powf(self, p: Self) -> Self {
        let y = self.re.vpowf(p.re);
        let dx = self
            .du
            .strong_times(p.re.strong_times(self.re.vpowf(p.re - T::one())));
        let dp = if p.du.is_exact_zero() || self.re == T::zero() {
            T::zero()
        } else {
            p.du * (y * self.re.vln())
        };
        Dual::new(y, dx + dp)
    }
    #[inline]
    fn sqrt(self) -> Self {
        self.apply(scalar::sqrt::value, scalar::sqrt::tangent)
    }
    #[inline]
    fn cbrt(self) -> Self {
        let y = self.re.cbrt();
        self.chain_div(y, T::from_f64(3.0) * y * y)
    }
    #[inline]
    fn exp(self) -> Self {
        self.apply(scalar::exp::value, scalar::exp::tangent)
    }
    #[inline]
    fn exp2(self) -> Self {
        self.apply(scalar::exp2::value, scalar::exp2::tangent)
    }
    #[inline]
    fn exp_m1(self) -> Self {
        self.apply(scalar::expm1::value, scalar::expm1::tangent)
    }
    #[inline]
    fn ln(self) -> Self {
        self.apply(scalar::ln::value, scalar::ln::tangent)
    }
    #[inline]
    fn ln_1p(self) -> Self {
        self.apply(scalar::log1p::value, scalar::log1p::tangent)
    }
    /// `ln(x) / ln(base)`, differentiable in both.
    #[inline]
    fn log(self, base: Self) -> Self {
        self.ln() / base.ln()
    }
    #[inline]
    fn log2(self) -> Self {
        self.apply(scalar::log2::value, scalar::log2::tangent)
    }
    #[inline]
    fn log10(self) -> Self {
        self.chain_div(
            self.re.log10(),
            self.re * T::from_f64(std::f64::consts::LN_10),
        )
    }
    #[inline]
    fn to_degrees(self) -> Self {
        Dual::new(self.re.to_degrees(), self.du.to_degrees())
    }
    #[inline]
    fn to_radians(self) -> Self {
        Dual::new(self.re.to_radians(), self.du.to_radians())
    }

    /// The larger primal wins with its tangent; NaN loses (as `f64::max`); at a tie the tangent
    /// is the mean of both (as JAX's `max`).
    #[inline]
    fn max(self, o: Self) -> Self {
        pick(self, o, self.re > o.re, o.re > self.re, self.re.max(o.re))
    }
    /// The smaller primal wins with its tangent; NaN loses (as `f64::min`); at a tie the tangent
    /// is the mean of both (as JAX's `min`).
    #[inline]
    fn min(self, o: Self) -> Self {
        pick(self, o, self.re < o.re, o.re < self.re, self.re.min(o.re))
    }
    /// `max(x - y, 0)`.
    #[inline]
    fn abs_sub(self, o: Self) -> Self {
        if self.re <= o.re {
            Self::zero()
        } else {
            self - o
        }
    }
    /// `(x dx + y dy) / hypot(x, y)`.
    #[inline]
    fn hypot(self, o: Self) -> Self {
        let h = self.re.hypot(o.re);
        let num = strong_mul(self.du, self.re) + strong_mul(o.du, o.re);
        Dual::new(h, strong_div(num, h))
    }

    #[inline]
    fn sin(self) -> Self {
        self.apply(scalar::sin::value, scalar::sin::tangent)
    }
    #[inline]
    fn cos(self) -> Self {
        self.apply(scalar::cos::value, scalar::cos::tangent)
    }
    #[inline]
    fn sin_cos(self) -> (Self, Self) {
        let (s, c) = (self.re.vsin(), self.re.vcos());
        (self.chain(s, c), self.chain(c, -s))
    }
    #[inline]
    fn tan(self) -> Self {
        self.apply(scalar::tan::value, scalar::tan::tangent)
    }
    #[inline]
    fn asin(self) -> Self {
        self.apply(scalar::asin::value, scalar::asin::tangent)
    }
    #[inline]
    fn acos(self) -> Self {
        self.apply(scalar::acos::value, scalar::acos::tangent)
    }
    #[inline]
    fn atan(self) -> Self {
        self.apply(scalar::atan::value, scalar::atan::tangent)
    }
    /// `atan2(y, x)` with `self = y`: `(x dy - y dx) / (x² + y²)`.
    #[inline]
    fn atan2(self, x: Self) -> Self {
        let num = strong_mul(self.du, x.re) - strong_mul(x.du, self.re);
        let r2 = x.re * x.re + self.re * self.re;
        Dual::new(self.re.atan2(x.re), strong_div(num, r2))
    }
    #[inline]
    fn sinh(self) -> Self {
        self.apply(scalar::sinh::value, scalar::sinh::tangent)
    }
    #[inline]
    fn cosh(self) -> Self {
        self.apply(scalar::cosh::value, scalar::cosh::tangent)
    }
    #[inline]
    fn tanh(self) -> Self {
        self.apply(scalar::tanh::value, scalar::tanh::tangent)
    }
    #[inline]
    fn asinh(self) -> Self {
        self.apply(scalar::asinh::value, scalar::asinh::tangent)
    }
    #[inline]
    fn acosh(self) -> Self {
        self.apply(scalar::acosh::value, scalar::acosh::tangent)
    }
    #[inline]
    fn atanh(self) -> Self {
        self.apply(scalar::atanh::value, scalar::atanh::tangent)
    }
}

/// `a` if `a_wins`, `b` if `b_wins`, otherwise (a tie, or NaN) the value `tie` with the mean
/// tangent of both when both are numbers, and the non-NaN operand when one is NaN.
#[inline]
fn pick<T: Element>(a: Dual<T>, b: Dual<T>, a_wins: bool, b_wins: bool, tie: T) -> Dual<T> {
    if a_wins || b.re.is_nan() {
        a
    } else if b_wins || a.re.is_nan() {
        b
    } else {
        Dual::new(tie, (a.du + b.du) * T::from_f64(0.5))
    }
}

// ---- runtime traits -------------------------------------------------------------------------

impl<T: Element> ScalarOperand for Dual<T> {}

impl<T: Element> Operand for Dual<T> {
    type Elem = Dual<T>;
    #[inline]
    fn operand(&self) -> OperandRef<'_, Dual<T>> {
        OperandRef::Scalar(*self)
    }
}

// A dual number beside a tensor of dual numbers is in `ops::arith`. Plain `f64`s (and `f32`s on
// the right of tensors over `f32`) are constants with zero tangents: see `FromScalar`.

impl<T: Element, U: Element + FromScalar<Dual<T>>> OperandOf<U> for Dual<T> {
    #[inline]
    fn operand_of(&self) -> OperandRef<'_, U> {
        OperandRef::Scalar(U::from_scalar(*self))
    }
}

impl<T: Element> Residual for Dual<T> {
    type Owned = Dual<T>;
    #[inline]
    fn residual(&self) -> Dual<T> {
        *self
    }
}

impl<T: Element> Scalar for Dual<T> {}

impl<T: Element + FromScalar<f32>> FromScalar<f32> for Dual<T> {
    #[inline]
    fn from_scalar(s: f32) -> Self {
        Dual::constant(T::from_scalar(s))
    }
}

impl<T: Element> FromScalar<Dual<T>> for Dual<T> {
    #[inline]
    fn from_scalar(s: Dual<T>) -> Self {
        s
    }
}

impl<T: Element> Element for Dual<T> {
    const NAME: &'static str = "Dual";
    const FD_EPS: f64 = T::FD_EPS;
    const GRAD_TOL: f64 = T::GRAD_TOL;

    #[inline]
    fn gemm_kernel() -> Option<GemmKernel<Self>> {
        Some(products::dual_gemm::<T>)
    }

    #[inline]
    fn from_f64(v: f64) -> Self {
        Dual::constant(T::from_f64(v))
    }
    #[inline]
    fn to_real(self) -> f64 {
        self.re.to_real()
    }
    #[inline]
    fn is_exact_zero(self) -> bool {
        self.re.is_exact_zero() && self.du.is_exact_zero()
    }
    #[inline]
    fn strong_times(self, d: Self) -> Self {
        Dual::new(
            self.re.strong_times(d.re),
            self.re.strong_times(d.du) + self.du.strong_times(d.re),
        )
    }
    /// Both parts, each cast to the target's precision: see [`Element::cast_to`].
    #[inline]
    fn cast_to<U: Element>(self) -> U {
        U::from_dual_parts(self.re, self.du)
    }
    #[inline]
    fn from_dual_parts<S: Element>(re: S, du: S) -> Self {
        Dual::new(re.cast_to(), du.cast_to())
    }
    // `sin`, `cos` and `tan` with the kernels of a loop's pass handed to both parts: the fast
    // `f32` forms in a fast pass, noting an argument outside their range (`Element::vsin_in`).
    // The scalar forms are called directly rather than through `apply`'s function pointers, so
    // that they are inlined into the loops compiled for the CPU's vector instructions.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vsin_in(self, kernels: &Kernels) -> Self {
        Dual::new(
            scalar::sin::value_in(self.re, kernels),
            scalar::sin::tangent_in(self.du, Input(self.re), kernels),
        )
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vcos_in(self, kernels: &Kernels) -> Self {
        Dual::new(
            scalar::cos::value_in(self.re, kernels),
            scalar::cos::tangent_in(self.du, Input(self.re), kernels),
        )
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vtan_in(self, kernels: &Kernels) -> Self {
        let y = scalar::tan::value_in(self.re, kernels);
        Dual::new(y, scalar::tan::tangent_in(self.du, Output(y), kernels))
    }
    #[inline]
    fn erf(self) -> Self {
        self.apply(scalar::erf::value, scalar::erf::tangent)
    }
    #[inline]
    fn erfc(self) -> Self {
        self.apply(scalar::erfc::value, scalar::erfc::tangent)
    }
    #[inline]
    fn erfinv(self) -> Self {
        self.apply(scalar::erfinv::value, scalar::erfinv::tangent)
    }
    #[inline]
    fn ln_gamma(self) -> Self {
        self.apply(scalar::lgamma::value, scalar::lgamma::tangent)
    }
    /// `ψ⁽ⁿ⁾(re) + ψ⁽ⁿ⁺¹⁾(re)·du·ε`.
    #[inline]
    fn polygamma(self, n: u32) -> Self {
        self.chain(
            Element::polygamma(self.re, n),
            Element::polygamma(self.re, n + 1),
        )
    }
}

/// `re + duε`; a nested dual's parts are parenthesised.
impl<T: Element> fmt::Display for Dual<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nested = T::NAME == Self::NAME;
        let part = |f: &mut fmt::Formatter<'_>, v: &T| -> fmt::Result {
            if nested {
                f.write_str("(")?;
                fmt::Display::fmt(v, f)?;
                f.write_str(")")
            } else {
                fmt::Display::fmt(v, f)
            }
        };
        part(f, &self.re)?;
        f.write_str(" + ")?;
        part(f, &self.du)?;
        f.write_str("ε")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vmath::trig::FAST_MAX_F32;

    /// The same bits in both parts (any NaN matching any NaN).
    fn same(a: Dual<f32>, b: Dual<f32>) -> bool {
        let part = |u: f32, v: f32| u.to_bits() == v.to_bits() || (u.is_nan() && v.is_nan());
        part(a.re, b.re) && part(a.du, b.du)
    }

    /// `sin`, `cos` and `tan` of a `Dual<f32>` in a fast pass hand the kernels to both parts:
    /// over the fast range they give the full-range functions' value and tangent bit for bit
    /// and note nothing, and beyond it they note the argument (and the exact pass gives the
    /// full-range results).
    #[test]
    fn dual_f32_trig_takes_the_fast_kernels_in_a_fast_pass() {
        type Method = fn(Dual<f32>, &Kernels) -> Dual<f32>;
        type Full = fn(Dual<f32>) -> Dual<f32>;
        let methods: [(&str, Method, Full); 3] = [
            ("sin", Dual::vsin_in, Dual::sin),
            ("cos", Dual::vcos_in, Dual::cos),
            ("tan", Dual::vtan_in, Dual::tan),
        ];
        let edge = FAST_MAX_F32.to_bits();
        // Every 997th bit pattern up to the bound, the 2^12 below it, and the f32 around the
        // multiples of π/2 (where tan is largest and sin or cos smallest).
        let near_pi_2 = (1..=3_819u32).flat_map(|k| {
            let c = (k as f64 * std::f64::consts::FRAC_PI_2) as f32;
            (-2..=2).map(move |d| f32::from_bits(c.to_bits().wrapping_add_signed(d)))
        });
        let xs = (0..=edge)
            .step_by(997)
            .chain(edge - (1 << 12)..=edge)
            .map(f32::from_bits)
            .chain(near_pi_2)
            .flat_map(|x| [x, -x]);
        let mut n = 0;
        for (i, x) in xs.enumerate() {
            let du = [1.0, -0.37, 0.0, 3.5e-3][i % 4];
            let d = Dual::new(x, du);
            for (name, method, full) in methods {
                let fast = Kernels::fast();
                let got = method(d, &fast);
                assert!(!fast.met_outside(), "{name}({d})");
                assert!(same(got, full(d)), "{name}({d}): {got} against {}", full(d));
            }
            n += 1;
        }
        assert!(n > 2_000_000, "{n} points");
        // Nested: the outer dual hands the kernels to the inner one.
        for x in [0.3f32, -2.5, 1000.25, -FAST_MAX_F32] {
            let d = Dual::new(Dual::new(x, 1.0), Dual::new(0.5, -2.0));
            for (got, want) in [
                (d.vsin_in(&Kernels::fast()), d.sin()),
                (d.vcos_in(&Kernels::fast()), d.cos()),
                (d.vtan_in(&Kernels::fast()), d.tan()),
            ] {
                assert!(same(got.re, want.re) && same(got.du, want.du), "{d}");
            }
        }
        // Beyond the fast range: noted in the fast pass, the full-range results in the exact
        // one.
        let above = f32::from_bits(edge + 1);
        for x in [above, -above, 1e30, 7.729_179e28, f32::INFINITY, f32::NAN] {
            let d = Dual::new(x, 1.0);
            for (name, method, full) in methods {
                let fast = Kernels::fast();
                let _ = method(d, &fast);
                assert!(fast.met_outside(), "{name}({d}) not noted");
                let exact = Kernels::exact();
                let got = method(d, &exact);
                assert!(!exact.met_outside(), "{name}({d})");
                assert!(same(got, full(d)), "{name}({d}): {got} against {}", full(d));
            }
        }
    }
}
