//! Tensors of dual numbers inside differentiated code: `dual_of`, `tangent_of`, `primal_of`.
//!
//! With them a differentiable function can run forward mode on dual numbers inside, and reverse
//! mode can differentiate that: reverse over forward. All three are linear, so their rules are
//! the ops themselves and their transposes.
//!
//! # Cotangents of dual tensors are stored swapped
//!
//! The reverse pass must apply the *transpose* of each op's derivative. On dual numbers the
//! derivative of an elementwise op is multiplication by a dual number `a = a₀ + a₁ε`, the linear
//! map `(x₀, x₁) ↦ (a₀x₀, a₁x₀ + a₀x₁)`; its transpose is `(g₀, g₁) ↦ (a₀g₀ + a₁g₁, a₀g₁)`. Store
//! a cotangent with its parts swapped, `h = (g₁, g₀)`, and the transpose becomes plain dual
//! multiplication again: `h ↦ a·h`. Every other part of a rule (sums, broadcasting, reshapes,
//! indexing) acts on each part alike. So the ordinary rules, run on dual elements, are right as
//! they are, provided the cotangent of a dual tensor keeps the tangent part's cotangent in `re`
//! and the primal part's in `du`: these three rules are the only place that convention shows.

use crate::element::dual::Dual;
use crate::element::Element;
use crate::error::{panicking_twin, ShapeError};
use crate::tensor::Tensor;

panicking_twin! {
    /// The tensor of dual numbers with primal parts `x` and tangent parts `v`.
    ///
    /// # Panics
    /// When the shapes differ.
    pub fn dual_of<T: Element>(x: &Tensor<T>, v: &Tensor<T>) -> Tensor<Dual<T>> => try_dual_of
}

/// Like [`dual_of`], returning an error when the shapes differ.
pub fn try_dual_of<T: Element>(
    x: &Tensor<T>,
    v: &Tensor<T>,
) -> Result<Tensor<Dual<T>>, ShapeError> {
    if x.shape() != v.shape() {
        return Err(ShapeError::new(
            "dual_of",
            format!(
                "the primal parts have shape {:?} and the tangent parts {:?}",
                x.shape(),
                v.shape()
            ),
        ));
    }
    Ok(Tensor::from_array(
        ndarray::Zip::from(x.view())
            .and(v.view())
            .map_collect(|&re, &du| Dual::new(re, du)),
    ))
}

/// The tangent parts of a tensor of dual numbers.
#[must_use]
pub fn tangent_of<T: Element>(y: &Tensor<Dual<T>>) -> Tensor<T> {
    y.map(|d| d.du)
}

/// The primal parts of a tensor of dual numbers.
#[must_use]
pub fn primal_of<T: Element>(y: &Tensor<Dual<T>>) -> Tensor<T> {
    y.map(|d| d.re)
}

/// Rules of the dual-number ops.
pub mod rules {
    use super::*;

    /// JVP of `dual_of(x, v)`: the dual tensor of the tangents (zero for a constant input).
    pub fn dual_of_jvp<T: Element>(
        y: &Tensor<Dual<T>>,
        dx: Option<&Tensor<T>>,
        dv: Option<&Tensor<T>>,
    ) -> Tensor<Dual<T>> {
        let zeros = Tensor::zeros(y.shape());
        dual_of(dx.unwrap_or(&zeros), dv.unwrap_or(&zeros))
    }
    /// VJP of `dual_of(x, v)` for `x`: the cotangent of the primal parts (stored in `du`,
    /// see the module docs).
    pub fn dual_of_vjp_lhs<T: Element>(g: &Tensor<Dual<T>>) -> Tensor<T> {
        tangent_of(g)
    }
    /// VJP of `dual_of(x, v)` for `v`: the cotangent of the tangent parts (stored in `re`).
    pub fn dual_of_vjp_rhs<T: Element>(g: &Tensor<Dual<T>>) -> Tensor<T> {
        primal_of(g)
    }

    /// JVP of `tangent_of(y)`.
    pub fn tangent_of_jvp<T: Element>(dy: &Tensor<Dual<T>>) -> Tensor<T> {
        tangent_of(dy)
    }
    /// VJP of `tangent_of(y)`: the cotangent of the tangent parts (stored in `re`).
    pub fn tangent_of_vjp<T: Element>(g: &Tensor<T>) -> Tensor<Dual<T>> {
        g.map(|&v| Dual::constant(v))
    }

    /// JVP of `primal_of(y)`.
    pub fn primal_of_jvp<T: Element>(dy: &Tensor<Dual<T>>) -> Tensor<T> {
        primal_of(dy)
    }
    /// VJP of `primal_of(y)`: the cotangent of the primal parts (stored in `du`).
    pub fn primal_of_vjp<T: Element>(g: &Tensor<T>) -> Tensor<Dual<T>> {
        g.map(|&v| Dual::new(T::zero(), v))
    }
}
