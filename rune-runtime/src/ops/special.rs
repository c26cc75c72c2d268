//! Smooth elementwise functions of two tensors, with NumPy broadcasting: `logaddexp`, `xlogy`,
//! `xlog1py`, `atan2`, `hypot`.
//!
//! Each is a kernel `f(a, b)` and its two partial derivatives `(∂f/∂a, ∂f/∂b)` at `(a, b)`,
//! written once below; the rules apply them to the tangents (`∂f/∂a·da + ∂f/∂b·db`) or to the
//! cotangent (`sum_to(g·∂f/∂a)` for `a`, likewise for `b`), with strong zeros.
//!
//! # Conventions
//!
//! - `logaddexp(a, b) = ln(e^a + e^b)`, computed as `max + ln(1 + e^-|a - b|)`, so that it
//!   neither overflows nor underflows; where `a == b` (also both `+inf` or both `-inf`, where
//!   `a - b` is NaN) it is `a + ln 2` and each side gets half the gradient. Its partials are
//!   `sigmoid(a - b)` and `sigmoid(b - a)`.
//! - `xlogy(x, y) = x·ln(y)` and `xlog1py(x, y) = x·ln(1 + y)` are `0` where `x = 0`, whatever
//!   `y` (also `0` or NaN), as SciPy and JAX define them; there the `y`-partial is `0` too.
//! - `atan2(y, x)` is the angle of the point `(x, y)` (`self` is `y`, as `f64::atan2`); its
//!   partials are `(x, -y) / (x² + y²)`, computed through `hypot` so that they do not overflow.
//!   `hypot(a, b) = √(a² + b²)` has partials `(a, b) / hypot`. At the origin, where neither is
//!   differentiable, both take the partials `0` (the subgradient of `hypot` of least norm).

use ndarray::Zip;

use crate::broadcast::{broadcast_shapes, broadcast_view, sum_to_shape};
use crate::element::{strong_mul, Element, OperandRef};
use crate::error::{OrPanic, ShapeError};
use crate::ops::arith::try_binary_map;
use crate::tensor::Tensor;

fn logaddexp_value<T: Element>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        return a + b;
    }
    if a == b {
        return a + T::from_f64(std::f64::consts::LN_2);
    }
    let m = if a > b { a } else { b };
    m + (-(a - b).abs()).vexp().vln_1p()
}

/// `sigmoid(a - b)`: `1/2` where `a == b`, including equal infinities.
fn logaddexp_share<T: Element>(a: T, b: T) -> T {
    if a == b {
        T::from_f64(0.5)
    } else {
        crate::scalar::sigmoid::value(a - b)
    }
}

fn logaddexp_partials<T: Element>(a: T, b: T) -> (T, T) {
    (logaddexp_share(a, b), logaddexp_share(b, a))
}

// `x` is a strong factor in `xlogy` and `xlog1py` ([`Element::strong_times`]): the value and
// the partial along `y` are zero at `x = 0` even where `ln(y)` or `1/y` is not finite, and on
// dual numbers they keep their derivatives along `x` (`ln y` and `1/y` there), which a branch on
// `x == 0` would drop from `f_hvp`.

fn xlogy_value<T: Element>(x: T, y: T) -> T {
    x.strong_times(y.vln())
}

fn xlogy_partials<T: Element>(x: T, y: T) -> (T, T) {
    (y.vln(), x.strong_times(y.recip()))
}

fn xlog1py_value<T: Element>(x: T, y: T) -> T {
    x.strong_times(y.vln_1p())
}

fn xlog1py_partials<T: Element>(x: T, y: T) -> (T, T) {
    (y.vln_1p(), x.strong_times((T::one() + y).recip()))
}

fn atan2_value<T: Element>(y: T, x: T) -> T {
    y.atan2(x)
}

fn atan2_partials<T: Element>(y: T, x: T) -> (T, T) {
    let h = y.hypot(x);
    if h == T::zero() {
        (T::zero(), T::zero())
    } else {
        (x / h / h, -(y / h / h))
    }
}

fn hypot_value<T: Element>(a: T, b: T) -> T {
    a.hypot(b)
}

fn hypot_partials<T: Element>(a: T, b: T) -> (T, T) {
    let h = a.hypot(b);
    if h == T::zero() {
        (T::zero(), T::zero())
    } else {
        (a / h, b / h)
    }
}

/// The scalar forms of this module's functions: each one's value and the share of a tangent or
/// cotangent `d` that each input gets (`_lhs`, `_rhs`: `d` times the partial derivative, with a
/// strong zero), from the partials the tensor rules apply. Fused regions of `#[differentiable]`
/// code inline them, so they compute what the ops compute one by one.
pub mod elementwise {
    use super::*;

    macro_rules! scalar_forms {
        ($($name:ident, $lhs:ident, $rhs:ident, $value:ident, $partials:ident;)*) => {$(
            #[doc = concat!("`", stringify!($name), "` of two numbers.")]
            #[inline]
            pub fn $name<T: Element>(a: T, b: T) -> T {
                $value(a, b)
            }

            #[doc = concat!("`d` times the partial derivative of `", stringify!($name),
                "` in its first input.")]
            #[inline]
            pub fn $lhs<T: Element>(d: T, a: T, b: T) -> T {
                strong_mul(d, $partials(a, b).0)
            }

            #[doc = concat!("`d` times the partial derivative of `", stringify!($name),
                "` in its second input.")]
            #[inline]
            pub fn $rhs<T: Element>(d: T, a: T, b: T) -> T {
                strong_mul(d, $partials(a, b).1)
            }
        )*};
    }

    scalar_forms! {
        logaddexp, logaddexp_lhs, logaddexp_rhs, logaddexp_value, logaddexp_partials;
        xlogy, xlogy_lhs, xlogy_rhs, xlogy_value, xlogy_partials;
        xlog1py, xlog1py_lhs, xlog1py_rhs, xlog1py_value, xlog1py_partials;
        atan2, atan2_lhs, atan2_rhs, atan2_value, atan2_partials;
        hypot, hypot_lhs, hypot_rhs, hypot_value, hypot_partials;
    }
}

macro_rules! smooth_binary {
    ($($(#[$doc:meta])* $name:ident, $try_name:ident, $arg:ident, $value:ident, $partials:ident,
       $jvp:ident, $vjp_lhs:ident, $vjp_rhs:ident;)*) => {
        crate::ops::binary::binary_methods! {$(
            $(#[$doc])* $name, $try_name, $arg, $value;
        )*}

        /// Rules of the smooth binary functions (see the module's conventions).
        pub mod rules {
            use super::*;
        $(
            #[doc = concat!("JVP of [`Tensor::", stringify!($name), "`], from both inputs and \
                their tangents (`None` for a constant input).")]
            ///
            /// # Panics
            /// When the shapes do not broadcast.
            #[track_caller]
            #[must_use]
            pub fn $jvp<T: Element>(
                a: &Tensor<T>,
                b: &Tensor<T>,
                da: Option<&Tensor<T>>,
                db: Option<&Tensor<T>>,
            ) -> Tensor<T> {
                let op = stringify!($jvp);
                let shape = broadcast_shapes(op, a.shape(), b.shape()).or_panic();
                let zeros = Tensor::zeros(&[]);
                let (da_on, db_on) = (da.is_some(), db.is_some());
                let da = broadcast_view(op, da.unwrap_or(&zeros), &shape).or_panic();
                let db = broadcast_view(op, db.unwrap_or(&zeros), &shape).or_panic();
                let av = broadcast_view(op, a, &shape).or_panic();
                let bv = broadcast_view(op, b, &shape).or_panic();
                Tensor::from_array(
                    Zip::from(&av)
                        .and(&bv)
                        .and(&da)
                        .and(&db)
                        .map_collect(|&a, &b, &da, &db| {
                            let (pa, pb) = $partials(a, b);
                            let ta = if da_on { strong_mul(da, pa) } else { T::zero() };
                            let tb = if db_on { strong_mul(db, pb) } else { T::zero() };
                            ta + tb
                        }),
                )
            }

            #[doc = concat!("VJP of [`Tensor::", stringify!($name), "`] for its first input, \
                from both inputs.")]
            ///
            /// # Panics
            /// When the inputs do not broadcast to `g`'s shape.
            #[track_caller]
            #[must_use]
            pub fn $vjp_lhs<T: Element>(g: &Tensor<T>, a: &Tensor<T>, b: &Tensor<T>) -> Tensor<T> {
                let t = pulled(stringify!($vjp_lhs), g, a, b, |a, b| $partials(a, b).0);
                sum_to_shape(&t, a.shape())
            }

            #[doc = concat!("VJP of [`Tensor::", stringify!($name), "`] for its second input, \
                from both inputs.")]
            ///
            /// # Panics
            /// When the inputs do not broadcast to `g`'s shape.
            #[track_caller]
            #[must_use]
            pub fn $vjp_rhs<T: Element>(g: &Tensor<T>, a: &Tensor<T>, b: &Tensor<T>) -> Tensor<T> {
                let t = pulled(stringify!($vjp_rhs), g, a, b, |a, b| $partials(a, b).1);
                sum_to_shape(&t, b.shape())
            }
        )*
        }
    };
}

/// `g·partial(a, b)` over `g`'s shape (the output's), before summing back to an input's shape.
#[track_caller]
fn pulled<T: Element>(
    op: &'static str,
    g: &Tensor<T>,
    a: &Tensor<T>,
    b: &Tensor<T>,
    partial: impl Fn(T, T) -> T,
) -> Tensor<T> {
    let shape = g.shape();
    let av = broadcast_view(op, a, shape).or_panic();
    let bv = broadcast_view(op, b, shape).or_panic();
    Tensor::from_array(
        Zip::from(g.view())
            .and(&av)
            .and(&bv)
            .map_collect(|&g, &a, &b| strong_mul(g, partial(a, b))),
    )
}

smooth_binary! {
    /// `ln(e^self + e^other)` elementwise, broadcasting, without overflow; `self + ln 2` where
    /// the two are equal (also equal infinities).
    ///
    /// ```
    /// use rune_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![1000.0, f64::NEG_INFINITY, 0.0], &[3]);
    /// let b = Tensor::from_vec(vec![1000.0, f64::NEG_INFINITY, -1000.0], &[3]);
    /// let y = a.logaddexp(&b).to_vec();
    /// assert_eq!(y[0], 1000.0 + 2f64.ln());
    /// assert_eq!(y[1], f64::NEG_INFINITY);
    /// assert_eq!(y[2], 0.0);
    /// ```
    logaddexp, try_logaddexp, other, logaddexp_value, logaddexp_partials,
        logaddexp_jvp, logaddexp_vjp_lhs, logaddexp_vjp_rhs;
    /// `self · ln(y)` elementwise, broadcasting, and `0` where `self` is `0` (whatever `y`).
    xlogy, try_xlogy, y, xlogy_value, xlogy_partials, xlogy_jvp, xlogy_vjp_lhs, xlogy_vjp_rhs;
    /// `self · ln(1 + y)` elementwise, broadcasting, and `0` where `self` is `0` (whatever `y`).
    xlog1py, try_xlog1py, y, xlog1py_value, xlog1py_partials, xlog1py_jvp, xlog1py_vjp_lhs,
        xlog1py_vjp_rhs;
    /// The angle of the point `(x, self)` in `(-π, π]`, elementwise, broadcasting (`self` is
    /// the `y` coordinate, as in `f64::atan2` and NumPy's `arctan2(y, x)`).
    atan2, try_atan2, x, atan2_value, atan2_partials, atan2_jvp, atan2_vjp_lhs, atan2_vjp_rhs;
    /// `√(self² + other²)` elementwise, broadcasting, without overflow.
    hypot, try_hypot, other, hypot_value, hypot_partials, hypot_jvp, hypot_vjp_lhs,
        hypot_vjp_rhs;
}
