//! What `f_hvp` (forward over reverse) does at its ends: it seeds each differentiated argument
//! with its direction as dual numbers ([`dual_seed`]), runs the gradient on them, and splits
//! each gradient into its primal part, the gradient, and its tangent part, the Hessian times
//! the directions ([`dual_primal`], [`dual_tangent`]). Tensors, numbers and arrays of numbers
//! (the parameters of a function of numbers) are seeded and split alike.

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
