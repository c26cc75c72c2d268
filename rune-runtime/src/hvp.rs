//! What `f_hvp` (forward over reverse) does at its ends: it seeds each differentiated argument
//! with its direction as dual numbers ([`dual_seed`]), runs the gradient on them, and splits
//! each gradient into its primal part, the gradient, and its tangent part, the Hessian times
//! the directions ([`dual_primal`], [`dual_tangent`]). Tensors, numbers and arrays of numbers
//! (the parameters of a function of numbers) are seeded and split alike. Constants are lifted
//! to dual numbers with zero tangents ([`Lift`]): the `#[nodiff]` arguments, and the tensor
//! fields of `self` that the dual twin of a method reads ([`TwinField`]).

use crate::element::Element;
use crate::tensor::Tensor;
use crate::Dual;

/// A differentiated argument of `f_hvp`: made dual numbers whose tangents are its direction.
pub trait DualSeed {
    /// What the direction is given as: the argument's own type (a slice's, a `Vec` coerced).
    type Direction: ?Sized;
    /// The argument on dual numbers.
    type Dual;
    /// Primal `self`, tangent `direction`.
    ///
    /// # Panics
    /// When the direction's shape (or length) differs from the argument's.
    fn seed(&self, direction: &Self::Direction) -> Self::Dual;
}

impl<T: Element> DualSeed for Tensor<T> {
    type Direction = Tensor<T>;
    type Dual = Tensor<Dual<T>>;
    #[track_caller]
    fn seed(&self, direction: &Tensor<T>) -> Tensor<Dual<T>> {
        assert_eq!(
            self.shape(),
            direction.shape(),
            "hvp: the direction has shape {:?}, the parameter {:?}",
            direction.shape(),
            self.shape()
        );
        Tensor::from_array(
            ndarray::Zip::from(self.view())
                .and(direction.view())
                .map_collect(|&re, &du| Dual::new(re, du)),
        )
    }
}

impl<D: DualSeed<Direction = D>> DualSeed for [D] {
    type Direction = [D];
    type Dual = Vec<D::Dual>;
    #[track_caller]
    fn seed(&self, direction: &[D]) -> Vec<D::Dual> {
        assert_eq!(
            self.len(),
            direction.len(),
            "hvp: the direction has {} elements, the parameter {}",
            direction.len(),
            self.len()
        );
        self.iter().zip(direction).map(|(x, d)| x.seed(d)).collect()
    }
}

impl<D: DualSeed<Direction = D>> DualSeed for Vec<D> {
    type Direction = Vec<D>;
    type Dual = Vec<D::Dual>;
    #[track_caller]
    fn seed(&self, direction: &Vec<D>) -> Vec<D::Dual> {
        self.as_slice().seed(direction)
    }
}

impl<D: DualSeed<Direction = D>, const N: usize> DualSeed for [D; N] {
    type Direction = [D; N];
    type Dual = [D::Dual; N];
    fn seed(&self, direction: &[D; N]) -> [D::Dual; N] {
        std::array::from_fn(|i| self[i].seed(&direction[i]))
    }
}

macro_rules! seed_numbers {
    ($($t:ty)*) => {$(
        impl DualSeed for $t {
            type Direction = $t;
            type Dual = Dual<$t>;
            #[inline]
            fn seed(&self, direction: &$t) -> Dual<$t> {
                Dual::new(*self, *direction)
            }
        }
    )*};
}
seed_numbers!(f32 f64);

/// `x` with tangent `direction`, as dual numbers (see [`DualSeed`]).
///
/// # Panics
/// When the direction's shape (or length) differs from `x`'s.
#[track_caller]
pub fn dual_seed<X: DualSeed + ?Sized>(x: &X, direction: &X::Direction) -> X::Dual {
    x.seed(direction)
}

/// A gradient on dual numbers, split into its primal and tangent parts.
pub trait DualParts {
    /// The gradient on real numbers.
    type Real;
    /// The primal parts.
    fn primal(&self) -> Self::Real;
    /// The tangent parts.
    fn tangent(&self) -> Self::Real;
}

impl<T: Element> DualParts for Tensor<Dual<T>> {
    type Real = Tensor<T>;
    fn primal(&self) -> Tensor<T> {
        self.map(|d| d.re)
    }
    fn tangent(&self) -> Tensor<T> {
        self.map(|d| d.du)
    }
}

impl<T: Element> DualParts for Dual<T> {
    type Real = T;
    fn primal(&self) -> T {
        self.re
    }
    fn tangent(&self) -> T {
        self.du
    }
}

impl<D: DualParts> DualParts for Vec<D> {
    type Real = Vec<D::Real>;
    fn primal(&self) -> Vec<D::Real> {
        self.iter().map(DualParts::primal).collect()
    }
    fn tangent(&self) -> Vec<D::Real> {
        self.iter().map(DualParts::tangent).collect()
    }
}

impl<D: DualParts, const N: usize> DualParts for [D; N] {
    type Real = [D::Real; N];
    fn primal(&self) -> [D::Real; N] {
        std::array::from_fn(|i| self[i].primal())
    }
    fn tangent(&self) -> [D::Real; N] {
        std::array::from_fn(|i| self[i].tangent())
    }
}

/// The primal parts of a gradient on dual numbers: the gradient.
pub fn dual_primal<D: DualParts>(dual: &D) -> D::Real {
    dual.primal()
}

/// The tangent parts of a gradient on dual numbers: the Hessian times the directions.
pub fn dual_tangent<D: DualParts>(dual: &D) -> D::Real {
    dual.tangent()
}

/// What the rules of `g_jvp` and `g_value_and_grad` as differentiated callees
/// (`rune_macros`' `emit::nested`) compute with, of a gradient's part (a tensor, a number, or a
/// structure's gradient): scaled by a number, added, and paired with a direction into a number.
pub trait GradPart: Sized {
    /// The element type.
    type Number: Element;
    /// `self · c`.
    fn scaled(&self, c: Self::Number) -> Self;
    /// `self + other`.
    fn plus(self, other: Self) -> Self;
    /// `Σ self · other`, elementwise (over every leaf).
    fn inner(&self, other: &Self) -> Self::Number;
}

impl<D: crate::Differentiable> GradPart for D {
    type Number = D::Elem;
    fn scaled(&self, c: D::Elem) -> Self {
        self.scale(c)
    }
    fn plus(mut self, other: Self) -> Self {
        // In place, leaf by leaf (`Differentiable::add` would copy `self` and scale `other`).
        for (leaf, o) in self.leaves_mut().into_iter().zip(other.leaves()) {
            *leaf += o;
        }
        self
    }
    fn inner(&self, other: &Self) -> D::Elem {
        self.leaves()
            .iter()
            .zip(other.leaves())
            .fold(num_traits::Zero::zero(), |acc: D::Elem, (a, b)| {
                acc + (*a * b).sum().item()
            })
    }
}

/// A one-element value of such a callee: its cotangent read as a number, and a number made its
/// tangent.
pub trait JvpPart: Sized {
    /// The element type.
    type Number: Element;
    /// The one element of a cotangent of a one-element value.
    fn number(&self) -> Self::Number;
    /// `n` in the shape of `self`, a one-element value.
    fn like(&self, n: Self::Number) -> Self;
}

impl<T: Element> JvpPart for Tensor<T> {
    type Number = T;
    #[track_caller]
    fn number(&self) -> T {
        self.item()
    }
    fn like(&self, n: T) -> Self {
        Tensor::full(self.shape(), n)
    }
}

macro_rules! jvp_numbers {
    ($($t:ty)*) => {$(
        impl GradPart for $t {
            type Number = $t;
            fn scaled(&self, c: $t) -> $t {
                self * c
            }
            fn plus(self, other: $t) -> $t {
                self + other
            }
            fn inner(&self, other: &$t) -> $t {
                self * other
            }
        }
        impl JvpPart for $t {
            type Number = $t;
            fn number(&self) -> $t {
                *self
            }
            fn like(&self, n: $t) -> $t {
                n
            }
        }
    )*};
}
jvp_numbers!(f32 f64);

/// A constant lifted to dual numbers (zero tangent), for the constant parameters of `f_hvp`.
pub trait Lift {
    /// The lifted type.
    type Lifted;
    /// The constant with zero tangents.
    fn lift(&self) -> Self::Lifted;
}

impl<T: Element> Lift for Tensor<T> {
    type Lifted = Tensor<Dual<T>>;
    fn lift(&self) -> Tensor<Dual<T>> {
        self.map(|&v| Dual::constant(v))
    }
}

/// The elements lifted (a structure's `Vec` of layers).
impl<X: Lift> Lift for Vec<X> {
    type Lifted = Vec<X::Lifted>;
    fn lift(&self) -> Vec<X::Lifted> {
        self.iter().map(Lift::lift).collect()
    }
}

impl<X: Lift, const N: usize> Lift for [X; N] {
    type Lifted = [X::Lifted; N];
    fn lift(&self) -> [X::Lifted; N] {
        std::array::from_fn(|i| self[i].lift())
    }
}

impl<X: Lift> Lift for Option<X> {
    type Lifted = Option<X::Lifted>;
    fn lift(&self) -> Option<X::Lifted> {
        self.as_ref().map(Lift::lift)
    }
}

impl<X: Lift + ?Sized> Lift for &X {
    type Lifted = X::Lifted;
    fn lift(&self) -> X::Lifted {
        (**self).lift()
    }
}

macro_rules! lift_scalar {
    ($($t:ty),*) => {$(
        impl Lift for $t {
            type Lifted = Dual<$t>;
            fn lift(&self) -> Dual<$t> {
                Dual::constant(*self)
            }
        }
    )*};
}
lift_scalar!(f32, f64);

impl<T: Element> Lift for Dual<T> {
    type Lifted = Dual<Dual<T>>;
    fn lift(&self) -> Dual<Dual<T>> {
        Dual::constant(*self)
    }
}

/// A tuple of constants (`train: &(Tensor<T>, Tensor<T>)`), each lifted.
impl<A: Lift, B: Lift> Lift for (A, B) {
    type Lifted = (A::Lifted, B::Lifted);
    fn lift(&self) -> Self::Lifted {
        (self.0.lift(), self.1.lift())
    }
}

/// A field of `self` read by the dual twin of a method on a concrete type (`#[nodiff] &self`
/// under `#[differentiable(hvp)]`), taken once at the top of the twin: tensors and lists of
/// them lifted to dual numbers (zero tangents, [`TwinReadLifted`]), anything else as it is
/// ([`TwinReadAsIs`]), chosen by the field's type (method resolution tries the lifted reading
/// on `&TwinField` before the other on `&&TwinField`).
#[derive(Debug)]
pub struct TwinField<'a, X: ?Sized>(pub &'a X);

/// Fields that the dual twin lifts: tensors, and `Vec`s and arrays of them.
pub trait TwinLifts: Lift {}

impl<T: Element> TwinLifts for Tensor<T> {}
impl<X: TwinLifts> TwinLifts for Vec<X> {}
impl<X: TwinLifts, const N: usize> TwinLifts for [X; N] {}

/// A tensor field lifted to dual numbers.
#[derive(Debug)]
pub struct TwinLifted<X>(X);

impl<X> std::ops::Deref for TwinLifted<X> {
    type Target = X;
    #[inline]
    fn deref(&self) -> &X {
        &self.0
    }
}

/// [`TwinField`] of a tensor (or a list of them): lifted.
pub trait TwinReadLifted {
    /// The field on dual numbers.
    type Lifted;
    /// The field lifted once.
    fn twin_read(&self) -> TwinLifted<Self::Lifted>;
}

impl<X: TwinLifts> TwinReadLifted for TwinField<'_, X> {
    type Lifted = X::Lifted;
    #[inline]
    fn twin_read(&self) -> TwinLifted<X::Lifted> {
        TwinLifted(self.0.lift())
    }
}

/// [`TwinField`] of anything else (a number, a count, a name): read as it is.
pub trait TwinReadAsIs<'a, X: ?Sized> {
    /// The field itself.
    fn twin_read(&self) -> &'a X;
}

impl<'a, X: ?Sized> TwinReadAsIs<'a, X> for &TwinField<'a, X> {
    #[inline]
    fn twin_read(&self) -> &'a X {
        self.0
    }
}

/// `self`'s field `$field` as the dual twin reads it ([`TwinField`]): the generated twin binds
/// each field it reads with this once, at its top.
#[doc(hidden)]
#[macro_export]
macro_rules! __rune_twin_field {
    ($field:expr) => {{
        #[allow(unused_imports)]
        use $crate::__private::{TwinReadAsIs as _, TwinReadLifted as _};
        (&$crate::__private::TwinField(&$field)).twin_read()
    }};
}
