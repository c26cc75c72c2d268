//! What the public entry points check and seed: the cotangent `1` of a one-element value
//! (`f_value_and_grad`), a cotangent's shapes against the value's (`f_vjp`), and, with the
//! `check-values` feature in debug builds, that each entry point computes the plain function's
//! value exactly.

use crate::element::Element;
use crate::tensor::Tensor;

/// The cotangent `1` for a function's single-element value, as `f_value_and_grad` seeds it.
///
/// # Panics
/// When the value has other than one element: `function` names the differentiated function.
#[track_caller]
pub fn scalar_seed<V: Seed>(function: &str, value: &V) -> V {
    value.seed(function)
}

/// A cotangent of a function's value: of the value's shape, element by element of a tuple.
pub trait CotangentOf<V: ?Sized> {
    /// The first mismatch: the output's position, the value's shape and the cotangent's.
    fn mismatch(&self, value: &V) -> Option<(usize, Vec<usize>, Vec<usize>)>;
}

impl<T> CotangentOf<Tensor<T>> for &Tensor<T> {
    fn mismatch(&self, value: &Tensor<T>) -> Option<(usize, Vec<usize>, Vec<usize>)> {
        (self.shape() != value.shape()).then(|| (0, value.shape().to_vec(), self.shape().to_vec()))
    }
}

impl<T: Element> CotangentOf<T> for &T {
    fn mismatch(&self, _value: &T) -> Option<(usize, Vec<usize>, Vec<usize>)> {
        None
    }
}

impl<T: Element, const N: usize> CotangentOf<[T; N]> for &[T; N] {
    fn mismatch(&self, _value: &[T; N]) -> Option<(usize, Vec<usize>, Vec<usize>)> {
        None
    }
}

macro_rules! cotangent_tuples {
    ($(($($c:ident $v:ident $i:tt),+))*) => {$(
        impl<$($c: CotangentOf<$v>, $v),+> CotangentOf<($($v,)+)> for ($($c,)+) {
            fn mismatch(&self, value: &($($v,)+)) -> Option<(usize, Vec<usize>, Vec<usize>)> {
                None$(.or_else(|| self.$i.mismatch(&value.$i).map(|(_, a, b)| ($i, a, b))))+
            }
        }
    )*};
}
cotangent_tuples! {
    (C0 V0 0, C1 V1 1)
    (C0 V0 0, C1 V1 1, C2 V2 2)
    (C0 V0 0, C1 V1 1, C2 V2 2, C3 V3 3)
}

/// Checks a cotangent against the value it is for, before the backward pass reads it.
///
/// # Panics
/// When a shape differs, naming the function and both shapes.
#[track_caller]
pub fn check_cotangent<V, C: CotangentOf<V>>(function: &str, value: &V, cotangent: &C) {
    if let Some((output, want, got)) = cotangent.mismatch(value) {
        panic!(
            "{function}_vjp: the cotangent of output {output} has shape {got:?}, but `{function}` \
             returned shape {want:?} there; a cotangent has exactly the shape of what it stands for"
        );
    }
}

/// A function's value whose gradient can be taken: a one-element tensor, or a number.
pub trait Seed: Sized {
    /// One, in the value's shape.
    fn seed(&self, function: &str) -> Self;
}

impl<T: Element> Seed for Tensor<T> {
    #[track_caller]
    fn seed(&self, function: &str) -> Self {
        if self.len() != 1 {
            panic!(
                "{function}_value_and_grad: `{function}` returned shape {:?}; a gradient needs a \
                 value with exactly one element (use `{function}_vjp` with a cotangent of that \
                 shape)",
                self.shape()
            );
        }
        Tensor::ones(self.shape())
    }
}

impl<T: Element> Seed for T {
    fn seed(&self, _function: &str) -> Self {
        T::one()
    }
}

/// A cotangent as the tensor the backward pass starts from: a tensor, or the number of a
/// function returning a number.
pub trait IntoCotangent<T> {
    /// The cotangent as a tensor.
    fn into_cotangent(self) -> Tensor<T>;
}

impl<T: Clone> IntoCotangent<T> for &Tensor<T> {
    #[inline]
    fn into_cotangent(self) -> Tensor<T> {
        self.clone()
    }
}

impl<T: Element> IntoCotangent<T> for &T {
    #[inline]
    fn into_cotangent(self) -> Tensor<T> {
        Tensor::scalar(*self)
    }
}

/// Whether generated entry points also run the plain function and check that they return
/// exactly its value (feature `check-values`, in debug builds): the invariant that the generated
/// code computes what the user wrote. rune-ad's own tests run with it.
pub const CHECK_VALUES: bool = cfg!(feature = "check-values");

/// A function's value that can be compared bit for bit (NaN equal to NaN).
pub trait SameValue {
    /// Whether `self` and `other` are the same numbers in the same shapes.
    fn same_value(&self, other: &Self) -> bool;
}

impl<T: Element> SameValue for T {
    fn same_value(&self, other: &Self) -> bool {
        self == other || (self.is_nan() && other.is_nan())
    }
}

impl<T: SameValue, const N: usize> SameValue for [T; N] {
    fn same_value(&self, other: &Self) -> bool {
        self.iter().zip(other).all(|(a, b)| a.same_value(b))
    }
}

impl<T: Element> SameValue for Tensor<T> {
    fn same_value(&self, other: &Self) -> bool {
        self.shape() == other.shape()
            && self
                .view()
                .iter()
                .zip(other.view().iter())
                .all(|(a, b)| a == b || (a.is_nan() && b.is_nan()))
    }
}

macro_rules! same_value_tuples {
    ($(($($t:ident $i:tt),+))*) => {$(
        impl<$($t: SameValue),+> SameValue for ($($t,)+) {
            fn same_value(&self, other: &Self) -> bool {
                $(self.$i.same_value(&other.$i))&&+
            }
        }
    )*};
}
same_value_tuples! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
}

/// Checks a generated variant's value against the plain function's (when `expected` is
/// there, see [`CHECK_VALUES`]).
///
/// # Panics
/// When they differ: the generated code did not compute what the user wrote.
#[track_caller]
pub fn check_same_value<V: SameValue>(
    function: &str,
    variant: &str,
    expected: Option<&V>,
    got: &V,
) {
    if let Some(expected) = expected {
        assert!(
            expected.same_value(got),
            "rune-ad: `{function}_{variant}` returned a different value from `{function}`: the \
             generated code does not compute what the function computes (please report this)"
        );
    }
}
