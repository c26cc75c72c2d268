//! Operands of binary ops: a tensor, a scalar, or a reference to either, as the arithmetic and
//! the rules read them. The traits are supertraits of [`Element`](super::Element), so code
//! generic over an element type can write `x * s` for a scalar `s: T`; they say nothing about
//! elements themselves, so that this file depends on the tensor type alone.

use crate::tensor::Tensor;

/// A borrowed operand of a binary op: a scalar or a tensor.
#[derive(Clone, Copy, Debug)]
pub enum OperandRef<'a, T> {
    /// A scalar, broadcast against the other operand.
    Scalar(T),
    /// A tensor.
    Tensor(&'a Tensor<T>),
}

/// An operand of the free functions [`add`](crate::add), [`sub`](crate::sub), [`mul`](crate::mul),
/// [`div`](crate::div): `Tensor<T>`, a scalar `T`, or a reference to either. (The operators take
/// more scalars: see [`FromScalar`](crate::FromScalar).)
pub trait Operand {
    /// The element type.
    type Elem;
    /// A borrowed view of the operand.
    fn operand(&self) -> OperandRef<'_, Self::Elem>;
}

impl<T> Operand for Tensor<T> {
    type Elem = T;
    #[inline]
    fn operand(&self) -> OperandRef<'_, T> {
        OperandRef::Tensor(self)
    }
}

impl<X: Operand + ?Sized> Operand for &X {
    type Elem = X::Elem;
    #[inline]
    fn operand(&self) -> OperandRef<'_, X::Elem> {
        (**self).operand()
    }
}

/// An operand of element type `T` as a rule reads it: a tensor of `T` (or a reference to one),
/// or a scalar that tensors of `T` take ([`FromScalar`](crate::FromScalar): `T` itself, an `f64` for any `T`, an
/// `f32` for `f32` and its dual numbers), converted to `T`.
pub trait OperandOf<T> {
    /// A borrowed view of the operand as elements of `T`.
    fn operand_of(&self) -> OperandRef<'_, T>;
}

impl<T> OperandOf<T> for Tensor<T> {
    #[inline]
    fn operand_of(&self) -> OperandRef<'_, T> {
        OperandRef::Tensor(self)
    }
}

impl<T, X: OperandOf<T> + ?Sized> OperandOf<T> for &X {
    #[inline]
    fn operand_of(&self) -> OperandRef<'_, T> {
        (**self).operand_of()
    }
}
