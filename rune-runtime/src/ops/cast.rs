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
///
/// Inside a `#[differentiable]` function the macro reads a call of it as a constant at every
/// order: the value it passes on carries no tangent in `f_jvp` and none in the dual numbers that
/// `f_hvp` runs the gradient on (see [`Detach`]).
#[must_use]
pub fn stop_gradient<X: Clone>(x: &X) -> X {
    x.clone()
}

/// A value with every derivative part dropped: a real element or tensor as it is, a dual number
/// (nested or not) as the constant of its primal value.
///
/// What a `stop_gradient(..)` of a differentiated value becomes in generated code. The forward
/// pass of `f_jvp` needs no more than not giving it a tangent, but `f_hvp` runs the generated
/// gradient on [`Dual`](crate::Dual) elements, where a value's tangent rides inside the value:
/// cutting it there is what makes a stopped value a constant to the second derivative too.
pub trait Detach {
    /// The value, constant to every order.
    #[must_use]
    fn detach(&self) -> Self;
}

impl<T: Element> Detach for T {
    #[inline]
    fn detach(&self) -> T {
        // `to_real` is the innermost primal part, exact in `f64` for every element type.
        T::from_f64(self.to_real())
    }
}

impl<T: Element> Detach for Tensor<T> {
    fn detach(&self) -> Tensor<T> {
        let any = self as &dyn Any;
        if any.is::<Tensor<f64>>() || any.is::<Tensor<f32>>() {
            return self.clone();
        }
        self.map_elems(Detach::detach)
    }
}

/// A configuration number or flag (a layer's `#[nodiff] stride: usize`) has no derivative part.
macro_rules! detach_as_is {
    ($($t:ty),*) => {$(
        impl Detach for $t {
            #[inline]
            fn detach(&self) -> $t {
                *self
            }
        }
    )*};
}
detach_as_is!(usize, isize, u8, u16, u32, u64, i8, i16, i32, i64, bool);

impl<X: Detach> Detach for Vec<X> {
    fn detach(&self) -> Vec<X> {
        self.iter().map(Detach::detach).collect()
    }
}

impl<X: Detach, const N: usize> Detach for [X; N] {
    fn detach(&self) -> [X; N] {
        std::array::from_fn(|i| self[i].detach())
    }
}

/// `x.cast::<U>()` as a derivative function computes it: the same values, and a panic at the
/// user's cast where it would drop the non-zero tangents of dual numbers (`Tensor<Dual<f64>>`
/// to `Tensor<f64>`).
///
/// A generic function's `f_hvp` runs its gradient on `Dual<T>`: a cast in it to a real element
/// type would lose the tangents, and with them the second derivative through the cast, without
/// a word. The macro refuses `f_hvp` of a generic function that casts so; this catches the same
/// cast in a function it calls, whose body the macro does not see.
///
/// # Panics
/// When `T` holds dual numbers, `U` does not, and some finite element of `x` has a non-zero
/// tangent.
#[track_caller]
#[must_use]
pub fn cast_differentiated<T: Element, U: Element>(x: &Tensor<T>) -> Tensor<U> {
    if T::NAME == "Dual" && U::NAME != "Dual" {
        let drops = x.view().iter().any(|&e| {
            // `e - detach(e)` keeps exactly the tangent parts (at every level of nesting).
            e.to_real().is_finite() && !(e - e.detach()).is_exact_zero()
        });
        assert!(
            !drops,
            "cast: a cast of dual numbers with non-zero tangents to {} would drop the tangents \
             (in `f_hvp`, the second derivative through the cast); cast to the function's \
             element type `T` instead, or write the function on concrete tensors with \
             `#[differentiable(hvp)]`",
            U::NAME
        );
    }
    x.cast::<U>()
}

/// `x` as a constant to every order ([`Detach`]): the call generated code makes of
/// `stop_gradient(&x)` for a differentiated value `x`.
#[must_use]
pub fn detach<X: Detach>(x: &X) -> X {
    x.detach()
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
