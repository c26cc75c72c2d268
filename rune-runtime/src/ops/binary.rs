//! Elementwise functions of two tensors, with NumPy broadcasting: `pow`, `maximum`, `minimum`,
//! `fmax`, `fmin`.
//!
//! # Conventions
//!
//! - `pow(a, b) = a^b`. Its derivative in `a` is `b·a^(b-1)`, and `0` where `b = 0` (the
//!   function is constant there), as in JAX. Its derivative in `b` is `ln(a)·a^b` with `ln(0)`
//!   read as `ln(1) = 0`, as JAX does: `0^b` has a zero `b`-gradient, not NaN.
//! - `maximum` and `minimum` take a tensor or a scalar on the right (`x.maximum(0.0)`), and
//!   propagate NaN (as NumPy's `maximum`/`minimum` and JAX's `max`/`min`). Where `a == b` the
//!   gradient is split evenly, half to each side, as JAX does (so `x.maximum(0.0)` passes half
//!   the gradient at `x == 0`, where `relu` passes none); where either side is NaN, neither side
//!   gets any gradient.
//! - `fmax` and `fmin` ignore NaN (as `f64::max`/`f64::min`, NumPy's and JAX's `fmax`/`fmin` and
//!   `torch.fmax`/`torch.fmin`): where one side is NaN the result is the other side, which gets
//!   the whole gradient. Elsewhere they agree with `maximum`/`minimum`, ties included. In a
//!   `#[differentiable]` function returning a number, `x.max(y)` and `x.min(y)` of numbers (and
//!   `f64::max(x, y)`) are these.

use std::borrow::Cow;

use ndarray::Zip;

use crate::broadcast::{broadcast_shapes, broadcast_view, sum_to_shape};
use crate::element::Element;
use crate::element::{OperandOf, OperandRef};
use crate::error::{panicking_twin, OrPanic, ShapeError};
use crate::ops::arith::try_binary_map;
use crate::tensor::Tensor;

/// The scalar forms of this module's ops: each op's value and the share of a tangent or
/// cotangent `d` that each input gets (`_lhs`, `_rhs`). The tensor kernels and rules apply them
/// element by element, and fused regions of `#[differentiable]` code inline them, so the two
/// compute the same numbers.
pub mod elementwise {
    use crate::element::{strong_mul, Element};

    /// The larger of `a` and `b`, NaN if either is.
    #[inline]
    pub fn maximum<T: Element>(a: T, b: T) -> T {
        if a >= b || a.is_nan() {
            a
        } else {
            b
        }
    }

    /// The smaller of `a` and `b`, NaN if either is.
    #[inline]
    pub fn minimum<T: Element>(a: T, b: T) -> T {
        if a <= b || a.is_nan() {
            a
        } else {
            b
        }
    }

    /// The larger of `a` and `b`, ignoring a NaN (`f64::max`): NaN only if both are.
    #[inline]
    pub fn fmax<T: Element>(a: T, b: T) -> T {
        if a >= b || b.is_nan() {
            a
        } else {
            b
        }
    }

    /// The smaller of `a` and `b`, ignoring a NaN (`f64::min`): NaN only if both are.
    #[inline]
    pub fn fmin<T: Element>(a: T, b: T) -> T {
        if a <= b || b.is_nan() {
            a
        } else {
            b
        }
    }

    /// `d` if `wins`, `d/2` if `tie`, else 0: the share of a selection's tangent that one side
    /// gets.
    #[inline]
    fn routed<T: Element>(d: T, wins: bool, tie: bool) -> T {
        if wins {
            d
        } else if tie {
            d * T::from_f64(0.5)
        } else {
            T::zero()
        }
    }

    /// The share of `d` that `a` gets in `maximum(a, b)`: all where `a > b`, half where `a == b`.
    #[inline]
    pub fn maximum_lhs<T: Element>(d: T, a: T, b: T) -> T {
        routed(d, a > b, a == b)
    }

    /// The share of `d` that `b` gets in `maximum(a, b)`: all where `b > a`, half where `a == b`.
    #[inline]
    pub fn maximum_rhs<T: Element>(d: T, a: T, b: T) -> T {
        routed(d, b > a, a == b)
    }

    /// The share of `d` that `a` gets in `minimum(a, b)`: all where `a < b`, half where `a == b`.
    #[inline]
    pub fn minimum_lhs<T: Element>(d: T, a: T, b: T) -> T {
        routed(d, a < b, a == b)
    }

    /// The share of `d` that `b` gets in `minimum(a, b)`: all where `b < a`, half where `a == b`.
    #[inline]
    pub fn minimum_rhs<T: Element>(d: T, a: T, b: T) -> T {
        routed(d, b < a, a == b)
    }

    /// The share of `d` that `a` gets in `fmax(a, b)`: as in `maximum`, and all of it where
    /// only `b` is NaN.
    #[inline]
    pub fn fmax_lhs<T: Element>(d: T, a: T, b: T) -> T {
        routed(d, a > b || (b.is_nan() && !a.is_nan()), a == b)
    }

    /// The share of `d` that `b` gets in `fmax(a, b)`: as in `maximum`, and all of it where
    /// only `a` is NaN.
    #[inline]
    pub fn fmax_rhs<T: Element>(d: T, a: T, b: T) -> T {
        routed(d, b > a || (a.is_nan() && !b.is_nan()), a == b)
    }

    /// The share of `d` that `a` gets in `fmin(a, b)`: as in `minimum`, and all of it where
    /// only `b` is NaN.
    #[inline]
    pub fn fmin_lhs<T: Element>(d: T, a: T, b: T) -> T {
        routed(d, a < b || (b.is_nan() && !a.is_nan()), a == b)
    }

    /// The share of `d` that `b` gets in `fmin(a, b)`: as in `minimum`, and all of it where
    /// only `a` is NaN.
    #[inline]
    pub fn fmin_rhs<T: Element>(d: T, a: T, b: T) -> T {
        routed(d, b < a || (a.is_nan() && !b.is_nan()), a == b)
    }

    /// `a^b`.
    #[inline]
    pub fn pow<T: Element>(a: T, b: T) -> T {
        a.vpowf(b)
    }

    /// `d·∂(a^b)/∂a = d·b·a^(b-1)`, and 0 where `b = 0` (also at `a = 0`, where `a^(b-1)` is
    /// infinite). The zero is `b`'s as a strong factor ([`Element::strong_times`]), not a branch
    /// on `b`'s value: on dual numbers the partial keeps its derivative along `b`, `a^(b-1)` at
    /// `b = 0`, which `f_hvp`'s mixed second derivative `∂²(a^b)/∂a∂b = 1/a` there needs.
    #[inline]
    pub fn pow_lhs<T: Element>(d: T, a: T, b: T) -> T {
        strong_mul(d, b.strong_times(a.vpowf(b - T::one())))
    }

    /// `d·∂(a^b)/∂b = d·ln(a)·y` from `a` and `y = a^b`, with `ln(0)` read as 0.
    #[inline]
    pub fn pow_rhs<T: Element>(d: T, a: T, y: T) -> T {
        let partial = if a == T::zero() {
            T::zero()
        } else {
            a.vln() * y
        };
        strong_mul(d, partial)
    }
}

use elementwise::{
    fmax as fmax_kernel, fmin as fmin_kernel, maximum as max_kernel, minimum as min_kernel,
};

macro_rules! binary_methods {
    ($($(#[$doc:meta])* $name:ident, $try_name:ident, $arg:ident, $kernel:expr;)*) => {
        impl<T: Element> Tensor<T> {$(
            crate::error::panicking_twin! {
                $(#[$doc])*
                ///
                /// # Panics
                /// When the shapes do not broadcast.
                pub fn $name(&self, $arg: &Tensor<T>) -> Tensor<T> => self.$try_name
            }

            #[doc = concat!("Like [`Tensor::", stringify!($name),
                "`], returning an error when the shapes do not broadcast.")]
            pub fn $try_name(&self, $arg: &Tensor<T>) -> Result<Tensor<T>, ShapeError> {
                try_binary_map(
                    stringify!($name),
                    OperandRef::Tensor(self),
                    OperandRef::Tensor($arg),
                    $kernel,
                )
            }
        )*}
    };
}

pub(crate) use binary_methods;

binary_methods! {
    /// `self ^ exponent` elementwise, broadcasting (NaN for a negative base and a non-integer
    /// exponent).
    pow, try_pow, exponent, elementwise::pow;
}

macro_rules! selection_methods {
    ($($(#[$doc:meta])* $name:ident, $try_name:ident, $kernel:expr;)*) => {
        impl<T: Element> Tensor<T> {$(
            panicking_twin! {
                $(#[$doc])*
                ///
                /// `other` is a tensor (owned or borrowed) or a scalar that tensors of `T` take
                /// ([`FromScalar`](crate::FromScalar)): `T`, or an `f64` for any `T`, so that
                /// `x.maximum(0.0)` reads in code generic over `T: Element` too. On dual numbers a
                /// plain float is the constant with a zero tangent.
                ///
                /// # Panics
                /// When the shapes do not broadcast.
                pub fn $name<B: OperandOf<T>>(&self, other: B) -> Tensor<T> => self.$try_name
            }

            #[doc = concat!("Like [`Tensor::", stringify!($name),
                "`], returning an error when the shapes do not broadcast.")]
            pub fn $try_name<B: OperandOf<T>>(&self, other: B) -> Result<Tensor<T>, ShapeError> {
                try_binary_map(
                    stringify!($name),
                    OperandRef::Tensor(self),
                    other.operand_of(),
                    $kernel,
                )
            }
        )*}
    };
}

selection_methods! {
    /// The larger of `self` and `other` elementwise, broadcasting; NaN if either is NaN.
    ///
    /// ```
    /// use rune_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![-1.0, 0.5, 2.0], &[3]);
    /// assert_eq!(x.maximum(0.0).to_vec(), vec![0.0, 0.5, 2.0]);
    /// assert_eq!(x.maximum(-&x).to_vec(), vec![1.0, 0.5, 2.0]);
    /// ```
    maximum, try_maximum, max_kernel;
    /// The smaller of `self` and `other` elementwise, broadcasting; NaN if either is NaN.
    ///
    /// ```
    /// use rune_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![-1.0, 0.5, 2.0], &[3]);
    /// assert_eq!(x.minimum(1.5).to_vec(), vec![-1.0, 0.5, 1.5]);
    /// ```
    minimum, try_minimum, min_kernel;
    /// The larger of `self` and `other` elementwise, broadcasting, ignoring NaN as `f64::max`
    /// does (NaN only where both are).
    ///
    /// ```
    /// use rune_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![-1.0, f64::NAN, 2.0], &[3]);
    /// assert_eq!(x.fmax(0.0).to_vec(), vec![0.0, 0.0, 2.0]);
    /// ```
    fmax, try_fmax, fmax_kernel;
    /// The smaller of `self` and `other` elementwise, broadcasting, ignoring NaN as `f64::min`
    /// does (NaN only where both are).
    ///
    /// ```
    /// use rune_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![-1.0, f64::NAN, 2.0], &[3]);
    /// assert_eq!(x.fmin(0.0).to_vec(), vec![-1.0, 0.0, 0.0]);
    /// ```
    fmin, try_fmin, fmin_kernel;
}

// ---- rules ----------------------------------------------------------------------------------
//
// | op      | JVP                                 | VJP (lhs)               | VJP (rhs)           |
// |---------|-------------------------------------|-------------------------|---------------------|
// | pow     | da·b·a^(b-1) + db·ln(a)·y           | sum_to(g·b·a^(b-1))     | sum_to(g·ln(a)·y)   |
// | maximum | da where a > b, db where b > a,     | sum_to(g·[a>b] + ½g·[a=b]) | same with b > a  |
// |         | (da + db)/2 where a == b            |                         |                     |
// | minimum | as maximum with < for >             |                         |                     |
// | fmax    | as maximum, and all to the non-NaN side where one side is NaN                   |
// | fmin    | as minimum, likewise                                                            |
//
// (`b·a^(b-1)` is 0 where b = 0; `ln(a)` is 0 where a = 0.) The rules of `maximum` and
// `minimum` read `b` as the forward op takes it, a tensor or a scalar; a scalar `b` is a
// constant, so only `a` has a VJP then.

/// Rules of the binary ops (see the module's table).
pub mod rules {
    use super::*;

    /// `f(d, p, q)` elementwise over `d`, `p` and `q` broadcast to `shape`.
    #[track_caller]
    fn zip3<T: Element>(
        op: &'static str,
        shape: &[usize],
        d: &Tensor<T>,
        p: &Tensor<T>,
        q: &Tensor<T>,
        f: impl Fn(T, T, T) -> T,
    ) -> Tensor<T> {
        let dv = broadcast_view(op, d, shape).or_panic();
        let pv = broadcast_view(op, p, shape).or_panic();
        let qv = broadcast_view(op, q, shape).or_panic();
        Tensor::from_array(
            Zip::from(&dv)
                .and(&pv)
                .and(&qv)
                .map_collect(|&d, &p, &q| f(d, p, q)),
        )
    }

    /// The sum of the per-input tangent contributions (each already of the output's shape).
    fn sum_tangents<T: Element>(
        shape: &[usize],
        lhs: Option<Tensor<T>>,
        rhs: Option<Tensor<T>>,
    ) -> Tensor<T> {
        match (lhs, rhs) {
            (Some(mut l), Some(r)) => {
                Zip::from(l.data_mut())
                    .and(r.view())
                    .for_each(|u, &v| *u += v);
                l
            }
            (Some(t), None) | (None, Some(t)) => t,
            (None, None) => Tensor::zeros(shape),
        }
    }

    #[track_caller]
    fn out_shape<T: Element>(op: &'static str, a: &Tensor<T>, b: &Tensor<T>) -> Vec<usize> {
        broadcast_shapes(op, a.shape(), b.shape()).or_panic()
    }

    /// An operand as a tensor: a scalar becomes a 0-d tensor, which broadcasts against anything.
    fn operand_tensor<T: Element>(b: OperandRef<'_, T>) -> Cow<'_, Tensor<T>> {
        match b {
            OperandRef::Scalar(s) => Cow::Owned(Tensor::scalar(s)),
            OperandRef::Tensor(t) => Cow::Borrowed(t),
        }
    }

    /// JVP of `y = a.pow(b)`, from `a`, `b`, `y` and the tangents (`None` for a constant input).
    ///
    /// # Panics
    /// When a tangent's shape does not broadcast to `y`'s.
    #[track_caller]
    #[must_use]
    pub fn pow_jvp<T: Element>(
        a: &Tensor<T>,
        b: &Tensor<T>,
        y: &Tensor<T>,
        da: Option<&Tensor<T>>,
        db: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        let shape = y.shape();
        let ta = da.map(|d| zip3("pow_jvp", shape, d, a, b, elementwise::pow_lhs));
        let tb = db.map(|d| zip3("pow_jvp", shape, d, a, y, elementwise::pow_rhs));
        sum_tangents(shape, ta, tb)
    }

    /// VJP of `y = a.pow(b)` for the base `a`, from `a` and `b`.
    ///
    /// # Panics
    /// When `a` or `b` does not broadcast to `g`'s shape.
    #[track_caller]
    #[must_use]
    pub fn pow_vjp_lhs<T: Element>(g: &Tensor<T>, a: &Tensor<T>, b: &Tensor<T>) -> Tensor<T> {
        let t = zip3("pow_vjp_lhs", g.shape(), g, a, b, elementwise::pow_lhs);
        sum_to_shape(&t, a.shape())
    }

    /// VJP of `y = a.pow(b)` for the exponent `b` (of shape `b_shape`), from `a` and `y`.
    ///
    /// # Panics
    /// When `a` does not broadcast to `g`'s shape or `y`'s shape is not `g`'s.
    #[track_caller]
    #[must_use]
    pub fn pow_vjp_rhs<T: Element>(
        g: &Tensor<T>,
        a: &Tensor<T>,
        y: &Tensor<T>,
        b_shape: &[usize],
    ) -> Tensor<T> {
        let t = zip3("pow_vjp_rhs", g.shape(), g, a, y, elementwise::pow_rhs);
        sum_to_shape(&t, b_shape)
    }

    macro_rules! selection_rules {
        ($($name:ident, $jvp:ident, $vjp_lhs:ident, $vjp_rhs:ident, $lhs:path, $rhs:path;)*) => {$(
            #[doc = concat!("JVP of [`Tensor::", stringify!($name), "`], from `a`, `b` (a tensor \
                or a scalar) and the tangents (`None` for a constant input); ties split the \
                tangent evenly.")]
            ///
            /// # Panics
            /// When the shapes do not broadcast.
            #[track_caller]
            #[must_use]
            pub fn $jvp<T: Element, B: OperandOf<T> + ?Sized>(
                a: &Tensor<T>,
                b: &B,
                da: Option<&Tensor<T>>,
                db: Option<&Tensor<T>>,
            ) -> Tensor<T> {
                let op = stringify!($jvp);
                let b = operand_tensor(b.operand_of());
                let b: &Tensor<T> = &b;
                let shape = out_shape(op, a, b);
                let ta = da.map(|d| zip3(op, &shape, d, a, b, $lhs));
                let tb = db.map(|d| zip3(op, &shape, d, a, b, $rhs));
                sum_tangents(&shape, ta, tb)
            }

            #[doc = concat!("VJP of [`Tensor::", stringify!($name), "`] for `a`, from `a` and \
                `b` (a tensor or a scalar); where `a == b`, `a` gets half the cotangent.")]
            ///
            /// # Panics
            /// When `a` or `b` does not broadcast to `g`'s shape.
            #[track_caller]
            #[must_use]
            pub fn $vjp_lhs<T: Element, B: OperandOf<T> + ?Sized>(
                g: &Tensor<T>,
                a: &Tensor<T>,
                b: &B,
            ) -> Tensor<T> {
                let b = operand_tensor(b.operand_of());
                let t = zip3(stringify!($vjp_lhs), g.shape(), g, a, &b, $lhs);
                sum_to_shape(&t, a.shape())
            }

            #[doc = concat!("VJP of [`Tensor::", stringify!($name), "`] for `b` (a tensor, since \
                it is differentiated), from `a` and `b`; where `a == b`, `b` gets half the \
                cotangent.")]
            ///
            /// # Panics
            /// When `a` or `b` does not broadcast to `g`'s shape.
            #[track_caller]
            #[must_use]
            pub fn $vjp_rhs<T: Element>(g: &Tensor<T>, a: &Tensor<T>, b: &Tensor<T>) -> Tensor<T> {
                let t = zip3(stringify!($vjp_rhs), g.shape(), g, a, b, $rhs);
                sum_to_shape(&t, b.shape())
            }
        )*};
    }

    selection_rules! {
        maximum, maximum_jvp, maximum_vjp_lhs, maximum_vjp_rhs,
            elementwise::maximum_lhs, elementwise::maximum_rhs;
        minimum, minimum_jvp, minimum_vjp_lhs, minimum_vjp_rhs,
            elementwise::minimum_lhs, elementwise::minimum_rhs;
        fmax, fmax_jvp, fmax_vjp_lhs, fmax_vjp_rhs,
            elementwise::fmax_lhs, elementwise::fmax_rhs;
        fmin, fmin_jvp, fmin_vjp_lhs, fmin_vjp_rhs,
            elementwise::fmin_lhs, elementwise::fmin_rhs;
    }
}
