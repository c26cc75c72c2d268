//! The element types a differentiable tensor can hold.
//!
//! [`Element`] is what every derivative rule is generic over: a real number type with the
//! arithmetic of [`num_traits::Float`] and the matrix-product support of
//! [`ndarray::LinalgScalar`]. It is implemented for `f32`, `f64` and the forward-mode dual numbers
//! [`Dual<f32>`](crate::Dual), [`Dual<f64>`](crate::Dual) (nesting too).
//!
//! [`Scalar`] and [`FromScalar`] say which plain numbers stand beside a tensor of an element type
//! in `x + 1.0`, `2.0 * x`, `x.powf(2.0)`, `x.gt(0.0)`: the element itself, and `f64` for every
//! element type (converted), so that code generic over `T: Element` can be written with float
//! literals. See [`FromScalar`].
//!
//! [`RangeElement`] is what [`Tensor::arange`](crate::Tensor::arange) counts in: every
//! `Element`, and `i64` for index tensors.
//!
//! # The core layer
//!
//! This module and its children are the bottom of the runtime: they import only the definition
//! of [`Tensor`](crate::Tensor) (which needs no element type), the scalar functions of
//! [`crate::scalar`], the GEMM kernels of `crate::gemm` (which import only ndarray and faer),
//! the math kernels of [`crate::vmath`] (plain arithmetic) and the special functions of
//! `crate::special` (which import only `libm`),
//! and nothing in the ops or in the support for generated code. `Element`'s
//! supertraits that code generic over `T: Element` relies on are defined here:
//! [`operand`] (a scalar beside a tensor in `x * s`) and [`residual`] (a scalar kept by a
//! backward pass). [`dual`] holds the forward-mode dual numbers, themselves elements.

use std::fmt::{Debug, Display};
use std::iter::{Product, Sum};
use std::ops::{AddAssign, DivAssign, MulAssign, SubAssign};

use ndarray::{LinalgScalar, ScalarOperand};
use num_traits::Float;

use crate::factorize::{self, FactorKernels};
use crate::gemm::{self, GemmKernel};
use crate::special;
use crate::vmath::{exp_log, extreme, trig, Kernels};

pub use self::operand::{Operand, OperandOf, OperandRef};
pub use self::residual::Residual;

pub mod dual;
pub mod operand;
pub mod residual;

/// A differentiable scalar: `f32`, `f64`, `Dual<f32>`, `Dual<f64>`, ...
///
/// Besides the arithmetic of [`Float`], rules need a few things `Float` does not say:
/// converting constants, telling an exactly-zero cotangent apart (see [`Element::is_exact_zero`]),
/// and default tolerances for gradient checks.
pub trait Element:
    Float
    + LinalgScalar
    + ScalarOperand
    + Default
    + Debug
    + Display
    + Send
    + Sync
    + Sum
    + Product
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
    + Operand<Elem = Self>
    + OperandOf<Self>
    + Scalar
    + FromScalar<Self>
    + FromScalar<f64>
    + Residual<Owned = Self>
    + 'static
{
    /// The type's name in error messages (`"f32"`, `"f64"`, `"Dual"`).
    const NAME: &'static str;

    /// Finite-difference step that [`check_grad`](crate::check_grad) users start from.
    const FD_EPS: f64;

    /// Relative and absolute tolerance for gradient checks at this precision (as
    /// `jax.test_util.check_grads` chooses them per dtype).
    const GRAD_TOL: f64;

    /// The constant `v` (rounded to this precision; a dual number gets a zero tangent).
    fn from_f64(v: f64) -> Self;

    /// The real (primal) part as `f64`.
    fn to_real(self) -> f64;

    /// True when this is exactly zero in every component.
    ///
    /// Rules use it to treat a zero cotangent or tangent as a *strong* zero: `0 * inf` is `0`
    /// there, not `NaN`, so a branch that `where_cond` did not select contributes nothing even
    /// where its local derivative is infinite. For a dual number both parts must be zero.
    fn is_exact_zero(self) -> bool;

    /// `self * d` with `self` a strong zero wherever it is exactly zero: in every term of the
    /// product that it multiplies, at every order.
    ///
    /// For a real this is `0` when `self` is zero and `self * d` otherwise. A dual number
    /// multiplies part by part, `(s + s'ε)(d + d'ε) = sd + (sd' + s'd)ε`, each of the three
    /// products strong in its left factor: a primal part of `self` that is zero keeps the
    /// primal part of the product zero (as the real computation gives) while its tangent part
    /// still carries `s'd`. So a guard written as a product (`b · a^(b-1)`, zero at `b = 0`)
    /// keeps the derivative of the guarded expression in `f_hvp`, where testing `b == 0` (the
    /// primal part alone) would drop it.
    fn strong_times(self, d: Self) -> Self;

    /// This value as another element type, as [`Tensor::cast`](crate::Tensor::cast) converts.
    ///
    /// Between `f32` and `f64` this is exactly `as`. A real becomes a dual constant. A dual keeps
    /// both parts (each cast) when the target is a dual, and gives its primal part when the
    /// target is a real; nested duals map level by level from the outside in. Every such map is
    /// a coordinate projection or embedding, so casting back is its adjoint.
    #[inline]
    fn cast_to<U: Element>(self) -> U {
        U::from_f64(self.to_real())
    }

    /// The element whose primal and tangent parts are `re` and `du` (each cast to this
    /// precision); a real takes `re` and drops `du`. What [`Element::cast_to`] builds a dual
    /// value into.
    #[inline]
    fn from_dual_parts<S: Element>(re: S, _du: S) -> Self {
        re.cast_to()
    }

    /// `e^x` as the ops compute it: `f32` and `f64` run the vectorisable kernels of
    /// [`crate::vmath`], other elements [`Float::exp`]. Likewise the `v*` methods below.
    #[doc(hidden)]
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vexp(self) -> Self {
        self.exp()
    }
    #[doc(hidden)]
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vexp_m1(self) -> Self {
        self.exp_m1()
    }
    #[doc(hidden)]
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vln(self) -> Self {
        self.ln()
    }
    #[doc(hidden)]
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vln_1p(self) -> Self {
        self.ln_1p()
    }
    #[doc(hidden)]
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vsin(self) -> Self {
        self.sin()
    }
    #[doc(hidden)]
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vcos(self) -> Self {
        self.cos()
    }
    /// `sin x` with the kernels of one pass of a loop ([`Kernels`]): `f32` takes the fast
    /// form in the fast pass and notes an argument outside its range, a dual number hands the
    /// kernels to its parts; others [`Element::vsin`].
    #[doc(hidden)]
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vsin_in(self, kernels: &Kernels) -> Self {
        let _ = kernels;
        self.vsin()
    }
    /// `cos x` with the kernels of one pass of a loop, as [`Element::vsin_in`].
    #[doc(hidden)]
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vcos_in(self, kernels: &Kernels) -> Self {
        let _ = kernels;
        self.vcos()
    }
    #[doc(hidden)]
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vtan(self) -> Self {
        self.tan()
    }
    /// `tan x` with the kernels of one pass of a loop, as [`Element::vsin_in`].
    #[doc(hidden)]
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vtan_in(self, kernels: &Kernels) -> Self {
        let _ = kernels;
        self.vtan()
    }
    #[doc(hidden)]
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vtanh(self) -> Self {
        self.tanh()
    }
    #[doc(hidden)]
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vpowf(self, p: Self) -> Self {
        self.powf(p)
    }

    /// The error function `erf(x) = 2/√π ∫₀ˣ e^(-t²) dt`.
    ///
    /// Called as `Element::erf(x)` (as the other special functions here): `f32` and `f64` may
    /// gain unstable inherent methods of these names.
    fn erf(self) -> Self;

    /// The complementary error function `1 - erf(x)`, accurate where it is small (large `x`).
    fn erfc(self) -> Self;

    /// The inverse error function on `[-1, 1]` (`±∞` at `±1`, NaN outside).
    fn erfinv(self) -> Self;

    /// `ln |Γ(x)|` (`+∞` at the poles `0, -1, -2, ..`).
    fn ln_gamma(self) -> Self;

    /// The polygamma function `ψ⁽ⁿ⁾(x)`, the `(n + 1)`-th derivative of `ln Γ`: `n = 0` is the
    /// digamma function, `n = 1` the trigamma function. See `crate::special` for its values at
    /// the poles.
    fn polygamma(self, n: u32) -> Self;

    /// The matrix-product kernel for this element type, when it has one faster than
    /// `ndarray`'s generic `general_mat_mul` (faer's GEMM for `f32` and `f64`); `None` keeps
    /// the generic one (dual numbers).
    #[doc(hidden)]
    #[inline]
    fn gemm_kernel() -> Option<GemmKernel<Self>> {
        None
    }

    /// The maximum (`max`) or minimum of a contiguous run, NaN if any element is NaN, when this
    /// element type has a vectorised kernel for it (`vmath::extreme`, for `f32` and `f64`);
    /// `None` keeps the running fold (dual numbers).
    #[doc(hidden)]
    #[inline]
    fn lane_extreme(_xs: &[Self], _max: bool) -> Option<Self> {
        None
    }

    /// The factorizations of `ops::decomp` (Cholesky, triangular solves, LU, QR, `eigh`, `svd`)
    /// for this element type, when it has faster ones than the generic kernels there (faer's
    /// for `f32` and `f64`); `None` keeps the generic ones (dual numbers).
    #[doc(hidden)]
    #[inline]
    fn factor_kernels() -> Option<FactorKernels<Self>> {
        None
    }
}

/// The `v*` methods of [`Element`] for `f32` or `f64`: the kernels of [`crate::vmath`].
macro_rules! kernels {
    ($($method:ident => $kernel:path),* ; $powf:path) => {
        $(
            #[cfg_attr(debug_assertions, inline)]
            #[cfg_attr(not(debug_assertions), inline(always))]
            fn $method(self) -> Self {
                $kernel(self)
            }
        )*
        #[cfg_attr(debug_assertions, inline)]
        #[cfg_attr(not(debug_assertions), inline(always))]
        fn vpowf(self, p: Self) -> Self {
            $powf(self, p)
        }
    };
}

impl Element for f32 {
    const NAME: &'static str = "f32";
    const FD_EPS: f64 = 1e-2;
    const GRAD_TOL: f64 = 2e-2;

    #[inline]
    fn erf(self) -> Self {
        libm::erff(self)
    }
    #[inline]
    fn erfc(self) -> Self {
        libm::erfcf(self)
    }
    #[inline]
    fn erfinv(self) -> Self {
        special::erfinv(self.into()) as f32
    }
    #[inline]
    fn ln_gamma(self) -> Self {
        libm::lgammaf(self)
    }
    #[inline]
    fn polygamma(self, n: u32) -> Self {
        special::polygamma(n, self.into()) as f32
    }

    #[inline]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline]
    fn to_real(self) -> f64 {
        self as f64
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn is_exact_zero(self) -> bool {
        self == 0.0
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn strong_times(self, d: Self) -> Self {
        if self == 0.0 {
            0.0
        } else {
            self * d
        }
    }
    #[inline]
    fn gemm_kernel() -> Option<GemmKernel<Self>> {
        Some(gemm::gemm_f32)
    }
    #[inline]
    fn lane_extreme(xs: &[Self], max: bool) -> Option<Self> {
        Some(if max {
            extreme::max_f32(xs)
        } else {
            extreme::min_f32(xs)
        })
    }
    #[inline]
    fn factor_kernels() -> Option<FactorKernels<Self>> {
        Some(factorize::F32)
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vsin_in(self, kernels: &Kernels) -> Self {
        if kernels.is_exact() {
            trig::sin_f32(self)
        } else {
            kernels.note_outside(trig::beyond_fast_f32(self));
            trig::sin_f32_fast(self)
        }
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vcos_in(self, kernels: &Kernels) -> Self {
        if kernels.is_exact() {
            trig::cos_f32(self)
        } else {
            kernels.note_outside(trig::beyond_fast_f32(self));
            trig::cos_f32_fast(self)
        }
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn vtan_in(self, kernels: &Kernels) -> Self {
        if kernels.is_exact() {
            trig::tan_f32(self)
        } else {
            kernels.note_outside(trig::beyond_fast_f32(self));
            trig::tan_f32_fast(self)
        }
    }
    kernels!(
        vexp => exp_log::exp_f32, vexp_m1 => exp_log::exp_m1_f32, vln => exp_log::ln_f32,
        vln_1p => exp_log::ln_1p_f32, vtanh => exp_log::tanh_f32, vsin => trig::sin_f32,
        vcos => trig::cos_f32, vtan => trig::tan_f32; exp_log::powf_f32
    );
}

impl Element for f64 {
    const NAME: &'static str = "f64";
    const FD_EPS: f64 = 1e-5;
    const GRAD_TOL: f64 = 1e-5;

    #[inline]
    fn erf(self) -> Self {
        libm::erf(self)
    }
    #[inline]
    fn erfc(self) -> Self {
        libm::erfc(self)
    }
    #[inline]
    fn erfinv(self) -> Self {
        special::erfinv(self)
    }
    #[inline]
    fn ln_gamma(self) -> Self {
        libm::lgamma(self)
    }
    #[inline]
    fn polygamma(self, n: u32) -> Self {
        special::polygamma(n, self)
    }

    #[inline]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline]
    fn to_real(self) -> f64 {
        self
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn is_exact_zero(self) -> bool {
        self == 0.0
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn strong_times(self, d: Self) -> Self {
        if self == 0.0 {
            0.0
        } else {
            self * d
        }
    }
    #[inline]
    fn gemm_kernel() -> Option<GemmKernel<Self>> {
        Some(gemm::gemm_f64)
    }
    #[inline]
    fn lane_extreme(xs: &[Self], max: bool) -> Option<Self> {
        Some(if max {
            extreme::max_f64(xs)
        } else {
            extreme::min_f64(xs)
        })
    }
    #[inline]
    fn factor_kernels() -> Option<FactorKernels<Self>> {
        Some(factorize::F64)
    }
    kernels!(
        vexp => exp_log::exp_f64, vexp_m1 => exp_log::exp_m1_f64, vln => exp_log::ln_f64,
        vln_1p => exp_log::ln_1p_f64, vtanh => exp_log::tanh_f64, vsin => trig::sin_f64,
        vcos => trig::cos_f64, vtan => trig::tan_f64; exp_log::powf_f64
    );
}

macro_rules! scalar_operand {
    ($($t:ty),*) => {$(
        impl Operand for $t {
            type Elem = $t;
            #[inline]
            fn operand(&self) -> OperandRef<'_, $t> {
                OperandRef::Scalar(*self)
            }
        }
    )*};
}
scalar_operand!(f32, f64);

// One impl per scalar type rather than one over every `Scalar`: a blanket impl would overlap the
// one for references above as far as coherence can tell.
macro_rules! scalar_operand_of {
    ($([$($gen:tt)*] $scalar:ty),*) => {$(
        impl<T: Element + FromScalar<$scalar>, $($gen)*> OperandOf<T> for $scalar {
            #[inline]
            fn operand_of(&self) -> OperandRef<'_, T> {
                OperandRef::Scalar(T::from_scalar(*self))
            }
        }
    )*};
}
scalar_operand_of!([] f32, [] f64);

/// A plain number that can stand beside tensors in `+ - * /`, comparisons, `maximum`,
/// `powf`, ...: `f32`, `f64`, a dual number, or a reference to one. Which tensors take which
/// scalar is [`FromScalar`]'s business; this trait only tells scalars apart from tensors.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a scalar (`f32`, `f64` or a dual number)",
    label = "expected a scalar, or a tensor of the other side's element type",
    note = "an op between two tensors needs both of the same element type: convert one with \
            `.cast::<T>()`",
    note = "in code generic over `T: Element`, `Tensor::scalar(1.0)` and `Tensor::full(shape, 1.0)` \
            hold floats, not `T`: write `Tensor::scalar(T::from_f64(1.0))`, or the literal alone \
            (`x + 1.0`)"
)]
pub trait Scalar: Copy {}

impl Scalar for f32 {}
impl Scalar for f64 {}
impl<S: Scalar> Scalar for &S {}

/// The scalars `S` that tensors of element type `Self` take, converted to `Self`.
///
/// A tensor of element `T` takes:
///
/// - a `T` (an `f32` for `Tensor<f32>`, a `Dual<f64>` for `Tensor<Dual<f64>>`);
/// - an `f64`, whatever `T` is: the constant `T::from_f64(v)` (rounded for `f32`; a dual
///   number with zero tangents). This is what makes float literals work in code generic over
///   `T: Element`: in `x + 1.0` with `x: &Tensor<T>`, the literal can only be an `f64`;
/// - an `f32` when `T` is `f32` or a dual number over `f32`;
/// - a reference to any of these.
///
/// On `Tensor<f64>` and tensors of `Dual<f64>` an unsuffixed literal is an `f64`, as before; on
/// `Tensor<f32>` it may be either float type and Rust settles on `f64`, converted to `f32` when
/// the op runs (the same value as an `f32` literal, but for decimal literals that lie
/// within 2⁻⁵³ of halfway between two `f32`s).
#[diagnostic::on_unimplemented(
    message = "tensors of `{Self}` do not take `{S}` as a scalar",
    label = "`{S}` is not a scalar that tensors of `{Self}` take",
    note = "a tensor of element `T` takes scalars of type `T`, `f64` (what an unsuffixed literal \
            such as `1.0` is in code generic over `T: Element`) and, when `T` is `f32` or a \
            dual number over it, `f32`",
    note = "convert other numbers with `T::from_f64(v)`, or give the literal no suffix"
)]
pub trait FromScalar<S>: Sized {
    /// `s` as an element of this type.
    fn from_scalar(s: S) -> Self;
}

impl<T: Element> FromScalar<f64> for T {
    #[inline]
    fn from_scalar(s: f64) -> T {
        T::from_f64(s)
    }
}

impl FromScalar<f32> for f32 {
    #[inline]
    fn from_scalar(s: f32) -> f32 {
        s
    }
}

impl<'a, T: FromScalar<S>, S: Scalar> FromScalar<&'a S> for T {
    #[inline]
    fn from_scalar(s: &'a S) -> T {
        T::from_scalar(*s)
    }
}

/// An element type [`Tensor::arange`](crate::Tensor::arange) and
/// [`Tensor::arange_step`](crate::Tensor::arange_step) count in: every [`Element`] (`f32`,
/// `f64`, dual numbers) and `i64`.
pub trait RangeElement: Copy + Display + 'static {
    /// The index `i` as this type (for a float, the nearest value where `i` is not exact).
    fn from_index(i: usize) -> Self;

    /// The number of elements of `start, start + step, ...` before `end`: `⌈(end - start) /
    /// step⌉`, as NumPy's `arange`. An error says what is wrong with the arguments: a zero step,
    /// a step pointing away from `end`, a non-finite float, or more elements than memory holds.
    fn range_len(start: Self, end: Self, step: Self) -> Result<usize, String>;

    /// `start + i·step`.
    fn range_at(start: Self, step: Self, i: usize) -> Self;
}

/// Why `start, start + step, ...` cannot count towards `end`, if it cannot. `zero`: the step is
/// zero; `away`: its sign is the opposite of `end - start`'s.
fn range_direction<T: Display>(
    start: T,
    end: T,
    step: T,
    zero: bool,
    away: bool,
) -> Result<(), String> {
    if zero {
        Err(format!(
            "step 0 never reaches end {end} from start {start}; the step must not be zero"
        ))
    } else if away {
        Err(format!(
            "step {step} points away from end {end} (start {start}); the step's sign must be \
             that of end - start"
        ))
    } else {
        Ok(())
    }
}

/// The most elements of type `T` one allocation can hold.
fn max_elements<T>() -> usize {
    isize::MAX as usize / std::mem::size_of::<T>()
}

/// The error for a range of `n` elements, more than one allocation can hold.
fn range_too_long(n: impl Display) -> String {
    format!("the range has {n} elements, more than a tensor can hold")
}

impl<T: Element> RangeElement for T {
    #[inline]
    fn from_index(i: usize) -> Self {
        T::from_f64(i as f64)
    }

    fn range_len(start: T, end: T, step: T) -> Result<usize, String> {
        let (s, e, d) = (start.to_real(), end.to_real(), step.to_real());
        if !(s.is_finite() && e.is_finite() && d.is_finite()) {
            return Err(format!(
                "start {start}, end {end} and step {step} must all be finite"
            ));
        }
        range_direction(start, end, step, d == 0.0, (e - s) * d < 0.0)?;
        let n = ((e - s) / d).ceil();
        if n > max_elements::<T>() as f64 {
            return Err(range_too_long(n));
        }
        Ok(n as usize)
    }

    #[inline]
    fn range_at(start: T, step: T, i: usize) -> T {
        start + step * T::from_index(i)
    }
}

impl RangeElement for i64 {
    #[inline]
    fn from_index(i: usize) -> Self {
        i64::try_from(i).expect("the index of a tensor's element fits in i64")
    }

    fn range_len(start: i64, end: i64, step: i64) -> Result<usize, String> {
        let span = i128::from(end) - i128::from(start);
        range_direction(
            start,
            end,
            step,
            step == 0,
            span.signum() * i128::from(step.signum()) < 0,
        )?;
        let (span, step) = (span.abs(), i128::from(step).abs());
        let n = (span + step - 1) / step;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= max_elements::<i64>())
            .ok_or_else(|| range_too_long(n))
    }

    #[inline]
    fn range_at(start: i64, step: i64, i: usize) -> i64 {
        // In i128: `i·step` may overflow i64 where `start + i·step` does not.
        (i128::from(start) + i128::from(step) * i128::from(i64::from_index(i))) as i64
    }
}

/// `g * d` where an exactly-zero `g` gives zero whatever `d` is (a strong zero).
///
/// This is the product every rule uses to apply a local derivative `d` to a tangent or
/// cotangent `g`; see [`Element::is_exact_zero`].
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub fn strong_mul<T: Element>(g: T, d: T) -> T {
    g.strong_times(d)
}
