//! Values the backward pass of generated code reads, in the owned form its pullback keeps. The
//! trait is a supertrait of [`Element`](super::Element), so a scalar of a generic element type is
//! kept like any other.

use smallvec::SmallVec;

use crate::tensor::Tensor;

/// A value the backward pass reads, converted to an owned form the pullback closure can keep
/// (tensors by cheap clone, scalars by copy, slices as small vectors).
pub trait Residual {
    /// The owned form.
    type Owned;
    /// Converts to the owned form.
    fn residual(&self) -> Self::Owned;
}

impl<U: Clone> Residual for Tensor<U> {
    type Owned = Tensor<U>;
    #[inline]
    fn residual(&self) -> Tensor<U> {
        self.clone()
    }
}

impl<X: Residual + ?Sized> Residual for &X {
    type Owned = X::Owned;
    #[inline]
    fn residual(&self) -> X::Owned {
        (**self).residual()
    }
}

impl Residual for str {
    type Owned = String;
    #[inline]
    fn residual(&self) -> String {
        self.to_owned()
    }
}

/// A key of a map of parameters (`params[&name]`), which the backward pass reads again.
impl Residual for String {
    type Owned = String;
    #[inline]
    fn residual(&self) -> String {
        self.clone()
    }
}

/// A slice's elements kept inline up to four (the ranges of a `shrink`, the axes of a
/// reduction), which a loop's backward pass keeps once an iteration: no allocation for them.
impl<U: Clone> Residual for [U] {
    type Owned = SmallVec<[U; 4]>;
    #[inline]
    fn residual(&self) -> SmallVec<[U; 4]> {
        SmallVec::from(self)
    }
}

impl<U: Clone> Residual for Vec<U> {
    type Owned = Vec<U>;
    #[inline]
    fn residual(&self) -> Vec<U> {
        self.clone()
    }
}

impl<U: Clone, const N: usize> Residual for [U; N] {
    type Owned = [U; N];
    #[inline]
    fn residual(&self) -> [U; N] {
        self.clone()
    }
}

macro_rules! copy_residual {
    ($($t:ty),*) => {$(
        impl Residual for $t {
            type Owned = $t;
            #[inline]
            fn residual(&self) -> $t {
                *self
            }
        }
    )*};
}
copy_residual!(
    f32,
    f64,
    usize,
    isize,
    bool,
    i64,
    i32,
    u32,
    u64,
    (usize, usize)
);
