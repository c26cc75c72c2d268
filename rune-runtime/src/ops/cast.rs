//! Element-type conversion (`cast`, also of masks to numbers), `stop_gradient`, and the table
//! entries of the Rune primitives that are plain Rust here (cloning, constants, random numbers,
//! in-place updates).

use std::any::Any;

use crate::element::Element;
use crate::tensor::Tensor;

impl<T: Element> Tensor<T> {
    /// The tensor with every element converted to `U` (see [`Element::cast_to`]).
    ///
    /// - `f32` ↔ `f64`: exactly Rust's `as` (`f32 → f64` is exact, `f64 → f32` rounds to nearest).
    /// - real → `Dual<_>`: a constant (tangent zero).
    /// - `Dual<_>` → `Dual<_>` of another precision: both parts, each cast.
    /// - `Dual<_>` → real: the primal part; the tangent is dropped.
    ///
    /// Casting to the same type returns a clone that shares storage.
    ///
    /// ```
    /// use rune_runtime::{Dual, Tensor};
    /// let x = Tensor::from_vec(vec![Dual::new(1.5_f32, 2.0)], &[1]);
    /// let y: Tensor<Dual<f64>> = x.cast();
    /// assert_eq!((y.item().re, y.item().du), (1.5, 2.0));
    /// assert_eq!(x.cast::<f64>().item(), 1.5);
    /// ```
    #[must_use]
    pub fn cast<U: Element>(&self) -> Tensor<U> {
        if let Some(same) = (self as &dyn Any).downcast_ref::<Tensor<U>>() {
            return same.clone();
        }
        self.map_elems(|&v| v.cast_to::<U>())
    }
}

impl Tensor<bool> {
    /// The mask as numbers of any element type: `true` becomes 1 and `false` 0.
    ///
    /// A mask is a constant to AD, and so is what it casts to: in a `#[differentiable]` function,
    /// `(x * x.gt(0.0).cast::<f64>()).sum()` differentiates through `x` alone.
    ///
    /// ```
    /// use rune_runtime::Tensor;
    /// let mask = Tensor::from_vec(vec![true, false, true], &[3]);
    /// assert_eq!(mask.cast::<f64>().to_vec(), vec![1.0, 0.0, 1.0]);
    /// assert_eq!(mask.cast::<f32>().mean().item(), 2.0 / 3.0);
    /// ```
    #[must_use]
    pub fn cast<U: Element>(&self) -> Tensor<U> {
        self.map_elems(|&v| if v { U::one() } else { U::zero() })
    }
}

/// `x` itself, as a constant to AD: the code generator gives its result no tangent and sends it
/// no cotangent, so the gradient through it is zero. It has no rules. It takes any value: a
/// tensor, or a `#[nodiff]` field of a structure parameter (`stop_gradient(&model.slope)`).
#[must_use]
pub fn stop_gradient<X: Clone>(x: &X) -> X {
    x.clone()
}

// ---- rules ----------------------------------------------------------------------------------
//
// `cast` from `T` to `U` is linear (a rounding, embedding or projection of coordinates), so its
// JVP is the same cast of the tangent and its VJP the cast back of the cotangent. Both rules take
// the generic parameters in the order <source T, target U>.

/// Rules of `cast`.
pub mod rules {
    use super::*;

    /// JVP of `y = x.cast::<U>()` for `x: Tensor<T>`: the tangent cast the same way.
    pub fn cast_jvp<T: Element, U: Element>(dx: &Tensor<T>) -> Tensor<U> {
        dx.cast::<U>()
    }

    /// VJP of `y = x.cast::<U>()` for `x: Tensor<T>`: the cotangent cast back to `T`.
    pub fn cast_vjp<T: Element, U: Element>(g: &Tensor<U>) -> Tensor<T> {
        g.cast::<T>()
    }

    /// [`cast_vjp`] with the source element type given by a zero-sized witness, so that
    /// generated code need not name it.
    pub fn cast_vjp_as<T: Element, U: Element>(
        g: &Tensor<U>,
        _source: std::marker::PhantomData<T>,
    ) -> Tensor<T> {
        g.cast::<T>()
    }
}
