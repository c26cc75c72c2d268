//! Parameter structures: the [`Differentiable`] trait that `#[derive(Differentiable)]`
//! implements, so that a model's parameters can be one argument of a differentiable function and
//! its gradient a value of the same type.

use crate::element::Element;
use crate::tensor::Tensor;

/// A structure of tensors that can be differentiated as a whole: a tensor, a struct deriving
/// `Differentiable`, or a `Vec`/array of them, or a `BTreeMap`/`HashMap` of them by key.
///
/// Its gradient is a value of the same type. The leaf tensors come in a fixed order (fields in
/// declaration order, elements in index order, map entries in key order), the same for every
/// value of the type with the same keys, so
/// optimizers can walk parameters, gradients and their own state side by side.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not `Differentiable`, so a #[differentiable] function cannot differentiate it",
    label = "taken for a structure of parameters",
    note = "derive `Differentiable` for a structure of tensors, or mark a constant parameter `#[nodiff]`"
)]
pub trait Differentiable: Clone {
    /// The element type of every leaf.
    type Elem: Element;

    /// The same structure with every leaf tensor zero (constant `#[nodiff]` fields are cloned).
    fn zeros_like(&self) -> Self;

    /// A zero tangent of the structure: every leaf zero, and also every `#[nodiff]` tensor
    /// field (a constant does not move); other `#[nodiff]` fields are cloned.
    fn zero_tangent(&self) -> Self {
        self.zeros_like()
    }

    /// `self`, a tangent given for a structure of this type, with zeros for its `#[nodiff]`
    /// tensor fields (a tangent made with `zeros_like` holds copies of those constants, which
    /// are not their tangents).
    fn as_tangent(&self) -> Self {
        self.clone()
    }

    /// The leaf tensors, in order.
    fn leaves(&self) -> Vec<&Tensor<Self::Elem>>;

    /// The leaf tensors, mutably, in the same order.
    fn leaves_mut(&mut self) -> Vec<&mut Tensor<Self::Elem>>;

    /// Each leaf's path (`"layers[1].w"`), in the same order; `prefix` is prepended.
    fn leaf_paths(&self, prefix: &str) -> Vec<String>;

    /// The structure's buffers, each with its path: the tensors of its `#[buffer]` fields and
    /// of its parts'. A buffer is state saved with the model but not differentiated, as a
    /// tensor PyTorch registers with `register_buffer` (a batch norm's running statistics):
    /// `io` saves and loads buffers beside the leaves, and nothing else reads them. None by
    /// default.
    fn buffers(&self, prefix: &str) -> Vec<(String, &Tensor<Self::Elem>)> {
        let _ = prefix;
        Vec::new()
    }

    /// [`buffers`](Self::buffers), mutably.
    fn buffers_mut(&mut self, prefix: &str) -> Vec<(String, &mut Tensor<Self::Elem>)> {
        let _ = prefix;
        Vec::new()
    }

    /// Leafwise `self + other`.
    ///
    /// # Panics
    /// When the two values' leaves differ in shape.
    #[must_use]
    fn add(&self, other: &Self) -> Self {
        let mut out = self.clone();
        out.axpy(Self::Elem::one(), other);
        out
    }

    /// Every leaf multiplied by `alpha`.
    #[must_use]
    fn scale(&self, alpha: Self::Elem) -> Self {
        let mut out = self.clone();
        for leaf in out.leaves_mut() {
            *leaf *= alpha;
        }
        out
    }

    /// `self += alpha * other`, leaf by leaf.
    ///
    /// # Panics
    /// When the two values' leaves differ in shape.
    fn axpy(&mut self, alpha: Self::Elem, other: &Self) {
        for (leaf, o) in self.leaves_mut().into_iter().zip(other.leaves()) {
            *leaf += &(o * alpha);
        }
    }
}

/// A field of a struct deriving `Differentiable`: a [`Differentiable`] value whose element type is
/// `E`, the struct's.
///
/// The derived impl bounds its fields by this trait rather than by `Differentiable<Elem = E>`,
/// for two reasons: a field that fails the bound gets one error saying what a field may be, and
/// a projection bound such as `Tensor<f64>: Differentiable<Elem = <Inner as Differentiable>::Elem>`
/// sends the trait solver around a cycle when `Inner`'s `Elem` is itself `Tensor<f64>`'s.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a differentiated field of a struct whose elements are `{E}`",
    label = "not `Differentiable` with elements `{E}`",
    note = "a differentiated field is a tensor, a `Differentiable` struct, or a `Vec` or array of \
            them, with the element type of the struct's other fields; mark a constant `#[nodiff]`"
)]
pub trait DifferentiableField<E: Element>: Sized {
    /// [`Differentiable::zeros_like`].
    fn zeros_like(&self) -> Self;
    /// [`Differentiable::zero_tangent`].
    fn zero_tangent(&self) -> Self;
    /// [`Differentiable::as_tangent`].
    fn as_tangent(&self) -> Self;
    /// [`Differentiable::leaves`].
    fn leaves(&self) -> Vec<&Tensor<E>>;
    /// [`Differentiable::leaves_mut`].
    fn leaves_mut(&mut self) -> Vec<&mut Tensor<E>>;
    /// [`Differentiable::leaf_paths`].
    fn leaf_paths(&self, prefix: &str) -> Vec<String>;
    /// [`Differentiable::buffers`].
    fn buffers(&self, prefix: &str) -> Vec<(String, &Tensor<E>)>;
    /// [`Differentiable::buffers_mut`].
    fn buffers_mut(&mut self, prefix: &str) -> Vec<(String, &mut Tensor<E>)>;
}

#[diagnostic::do_not_recommend]
impl<E: Element, D: Differentiable<Elem = E>> DifferentiableField<E> for D {
    fn zeros_like(&self) -> Self {
        Differentiable::zeros_like(self)
    }
    fn zero_tangent(&self) -> Self {
        Differentiable::zero_tangent(self)
    }
    fn as_tangent(&self) -> Self {
        Differentiable::as_tangent(self)
    }
    fn leaves(&self) -> Vec<&Tensor<E>> {
        Differentiable::leaves(self)
    }
    fn leaves_mut(&mut self) -> Vec<&mut Tensor<E>> {
        Differentiable::leaves_mut(self)
    }
    fn leaf_paths(&self, prefix: &str) -> Vec<String> {
        Differentiable::leaf_paths(self, prefix)
    }
    fn buffers(&self, prefix: &str) -> Vec<(String, &Tensor<E>)> {
        Differentiable::buffers(self, prefix)
    }
    fn buffers_mut(&mut self, prefix: &str) -> Vec<(String, &mut Tensor<E>)> {
        Differentiable::buffers_mut(self, prefix)
    }
}

use num_traits::One;

impl<T: Element> Differentiable for Tensor<T> {
    type Elem = T;
    fn zeros_like(&self) -> Self {
        Tensor::zeros(self.shape())
    }
    fn leaves(&self) -> Vec<&Tensor<T>> {
        vec![self]
    }
    fn leaves_mut(&mut self) -> Vec<&mut Tensor<T>> {
        vec![self]
    }
    fn leaf_paths(&self, prefix: &str) -> Vec<String> {
        vec![prefix.to_owned()]
    }
}

/// The leaf methods of a sequence of structures (`Vec`, arrays): each element's leaves in index
/// order, paths `prefix[i]...`.
macro_rules! sequence_leaves {
    () => {
        fn leaves(&self) -> Vec<&Tensor<D::Elem>> {
            self.iter().flat_map(D::leaves).collect()
        }
        fn leaves_mut(&mut self) -> Vec<&mut Tensor<D::Elem>> {
            self.iter_mut().flat_map(D::leaves_mut).collect()
        }
        fn leaf_paths(&self, prefix: &str) -> Vec<String> {
            self.iter()
                .enumerate()
                .flat_map(|(i, d)| d.leaf_paths(&format!("{prefix}[{i}]")))
                .collect()
        }
        fn buffers(&self, prefix: &str) -> Vec<(String, &Tensor<D::Elem>)> {
            self.iter()
                .enumerate()
                .flat_map(|(i, d)| d.buffers(&format!("{prefix}[{i}]")))
                .collect()
        }
        fn buffers_mut(&mut self, prefix: &str) -> Vec<(String, &mut Tensor<D::Elem>)> {
            self.iter_mut()
                .enumerate()
                .flat_map(|(i, d)| d.buffers_mut(&format!("{prefix}[{i}]")))
                .collect()
        }
    };
}

impl<D: Differentiable> Differentiable for Vec<D> {
    type Elem = D::Elem;
    fn zeros_like(&self) -> Self {
        self.iter().map(D::zeros_like).collect()
    }
    fn zero_tangent(&self) -> Self {
        self.iter().map(D::zero_tangent).collect()
    }
    fn as_tangent(&self) -> Self {
        self.iter().map(D::as_tangent).collect()
    }
    sequence_leaves!();
}

/// An optional structure: no leaves when `None`, the value's when `Some` (an optional bias).
impl<D: Differentiable> Differentiable for Option<D> {
    type Elem = D::Elem;
    fn zeros_like(&self) -> Self {
        self.as_ref().map(D::zeros_like)
    }
    fn zero_tangent(&self) -> Self {
        self.as_ref().map(D::zero_tangent)
    }
    fn as_tangent(&self) -> Self {
        self.as_ref().map(D::as_tangent)
    }
    fn leaves(&self) -> Vec<&Tensor<D::Elem>> {
        self.iter().flat_map(D::leaves).collect()
    }
    fn leaves_mut(&mut self) -> Vec<&mut Tensor<D::Elem>> {
        self.iter_mut().flat_map(D::leaves_mut).collect()
    }
    fn leaf_paths(&self, prefix: &str) -> Vec<String> {
        self.iter().flat_map(|d| d.leaf_paths(prefix)).collect()
    }
    fn buffers(&self, prefix: &str) -> Vec<(String, &Tensor<D::Elem>)> {
        self.iter().flat_map(|d| d.buffers(prefix)).collect()
    }
    fn buffers_mut(&mut self, prefix: &str) -> Vec<(String, &mut Tensor<D::Elem>)> {
        self.iter_mut()
            .flat_map(|d| d.buffers_mut(prefix))
            .collect()
    }
}

impl<D: Differentiable, const N: usize> Differentiable for [D; N] {
    type Elem = D::Elem;
    fn zeros_like(&self) -> Self {
        std::array::from_fn(|i| self[i].zeros_like())
    }
    fn zero_tangent(&self) -> Self {
        std::array::from_fn(|i| self[i].zero_tangent())
    }
    fn as_tangent(&self) -> Self {
        std::array::from_fn(|i| self[i].as_tangent())
    }
    sequence_leaves!();
}

/// The zero tangent of a `#[nodiff]` field that is a tensor: zeros. With
/// [`ZeroTangentOfConstant`], chosen by method resolution on `(&&field)` in derived code (a
/// tensor matches this impl first; any other `Clone` type falls through to a clone).
#[doc(hidden)]
pub trait ZeroTangentOfTensor<T> {
    /// Zeros of the tensor's shape.
    fn __rune_zero_tangent(&self) -> Tensor<T>;
}

impl<T: Element> ZeroTangentOfTensor<T> for &Tensor<T> {
    fn __rune_zero_tangent(&self) -> Tensor<T> {
        Tensor::zeros(self.shape())
    }
}

/// The zero tangent of a `#[nodiff]` field that is not a tensor: the value itself.
#[doc(hidden)]
pub trait ZeroTangentOfConstant<X> {
    /// A clone of the value.
    fn __rune_zero_tangent(&self) -> X;
}

impl<X: Clone> ZeroTangentOfConstant<X> for &&X {
    fn __rune_zero_tangent(&self) -> X {
        (**self).clone()
    }
}
