//! The adjoints and tangent slots every generated function shares, tensor code and functions
//! of numbers alike: adding a contribution to an adjoint, and the tangent a caller passes for
//! a differentiated parameter. `generated` and `numbers` both read them; this module reads
//! neither.

use crate::broadcast::same_shape;
use crate::element::Element;
use crate::tensor::Tensor;

/// Adds a contribution to an adjoint (`None` stands for zero).
///
/// An adjoint may share its storage: `add_vjp` passes the cotangent on as a cheap clone, so in
/// `h + h.tanh()` the adjoint of `h` still shares the cotangent's buffer when `tanh`'s
/// contribution arrives, and adding in place would first copy it (copy-on-write). When the
/// contribution's buffer is its own, the sum goes there instead; addition commutes, so the
/// result is the same.
#[inline]
pub fn accumulate<T: Element>(adjoint: &mut Option<Tensor<T>>, mut contribution: Tensor<T>) {
    match adjoint {
        None => *adjoint = Some(contribution),
        Some(a)
            if !a.is_unique()
                && contribution.is_unique()
                && same_shape(a.shape(), contribution.shape()) =>
        {
            contribution += &*a;
            *a = contribution;
        }
        Some(a) => *a += &contribution,
    }
}

/// The tangent slot a caller passes for an argument that is a constant in the caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoTangent;

/// A tangent passed to a differentiated parameter: a tensor, or [`NoTangent`] (zero).
pub trait TangentSlot<T: Element> {
    /// The tangent, zeros of `primal`'s shape for [`NoTangent`].
    fn tangent_or_zeros(self, primal: &Tensor<T>) -> Tensor<T>;
    /// The tangent of a number parameter of a function of numbers, zero for [`NoTangent`].
    fn number_tangent(self) -> T;
}

impl<T: Element> TangentSlot<T> for &Tensor<T> {
    #[inline]
    fn tangent_or_zeros(self, _primal: &Tensor<T>) -> Tensor<T> {
        self.clone()
    }
    #[track_caller]
    fn number_tangent(self) -> T {
        self.item()
    }
}

impl<T: Element> TangentSlot<T> for NoTangent {
    #[inline]
    fn tangent_or_zeros(self, primal: &Tensor<T>) -> Tensor<T> {
        Tensor::zeros(primal.shape())
    }
    #[inline(always)]
    fn number_tangent(self) -> T {
        T::zero()
    }
}

/// The tangent of a number parameter, as the 0-d tensor it is inside.
impl<T: Element> TangentSlot<T> for &T {
    #[inline]
    fn tangent_or_zeros(self, _primal: &Tensor<T>) -> Tensor<T> {
        Tensor::scalar(*self)
    }
    #[inline(always)]
    fn number_tangent(self) -> T {
        *self
    }
}
