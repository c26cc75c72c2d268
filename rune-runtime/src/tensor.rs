//! `Tensor<T>`: an n-dimensional array with shared, copy-on-write storage.
//!
//! Construction, access and conversion live here; the ops live in [`crate::ops`].

use std::fmt;

use ndarray::{ArcArray, ArrayD, ArrayViewD, IxDyn};
use num_traits::{One, Zero};

use crate::error::{checked_size, OrPanic, ShapeError};

mod convert;

/// An n-dimensional array of `T` (row-major), cheap to clone.
///
/// Storage is an [`ndarray::ArcArray`]: cloning shares it, and writing to a shared tensor copies
/// it first. Float tensors (`T: Element`) are differentiable; `Tensor<bool>` and `Tensor<i64>` serve
/// as masks and indices.
#[derive(Clone, PartialEq)]
pub struct Tensor<T> {
    data: ArcArray<T, IxDyn>,
}

impl<T> Tensor<T> {
    /// Wraps an ndarray array.
    #[inline]
    pub fn from_array(data: ArrayD<T>) -> Self {
        Tensor {
            data: ArcArray::from(data),
        }
    }

    /// Wraps shared ndarray storage without copying.
    #[inline]
    pub fn from_shared(data: ArcArray<T, IxDyn>) -> Self {
        Tensor { data }
    }

    /// The shape: one length per axis (empty for a 0-d tensor).
    #[inline]
    pub fn shape(&self) -> &[usize] {
        self.data.shape()
    }

    /// The number of axes.
    #[inline]
    pub fn ndim(&self) -> usize {
        self.data.ndim()
    }

    /// The number of elements (1 for a 0-d tensor).
    #[inline]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// A read-only ndarray view of the data.
    #[inline]
    pub fn view(&self) -> ArrayViewD<'_, T> {
        self.data.view()
    }

    /// The underlying shared array.
    #[inline]
    pub fn as_shared(&self) -> &ArcArray<T, IxDyn> {
        &self.data
    }

    /// Mutable access to the data (copies it first when the storage is shared).
    #[inline]
    pub(crate) fn data_mut(&mut self) -> &mut ArcArray<T, IxDyn>
    where
        T: Clone,
    {
        &mut self.data
    }
}

impl<T: Clone> Tensor<T> {
    /// A tensor of the given shape holding `data` in row-major order.
    ///
    /// # Panics
    /// When `data.len()` is not the product of `shape`.
    #[track_caller]
    pub fn from_vec(data: Vec<T>, shape: &[usize]) -> Self {
        Self::try_from_vec(data, shape).or_panic()
    }

    /// Like [`Tensor::from_vec`], returning an error on a size mismatch.
    pub fn try_from_vec(data: Vec<T>, shape: &[usize]) -> Result<Self, ShapeError> {
        let expected = checked_size::<T>("from_vec", shape, || {
            format!("{} elements for shape {shape:?}", data.len())
        })?;
        if data.len() != expected {
            return Err(ShapeError::new(
                "from_vec",
                format!(
                    "{} elements cannot fill shape {:?}, which holds {}",
                    data.len(),
                    shape,
                    expected
                ),
            ));
        }
        let array = ArrayD::from_shape_vec(IxDyn(shape), data)
            .expect("from_vec: length checked against the shape");
        Ok(Self::from_array(array))
    }

    /// A 0-d tensor holding `v`.
    pub fn scalar(v: T) -> Self {
        Self::from_array(ArrayD::from_elem(IxDyn(&[]), v))
    }

    /// A tensor of the given shape with every element `v`.
    ///
    /// # Panics
    /// When `shape` holds more elements than a tensor can.
    #[track_caller]
    pub fn full(shape: &[usize], v: T) -> Self {
        Self::try_full(shape, v).or_panic()
    }

    /// Like [`Tensor::full`], returning an error when `shape` holds more elements than a tensor
    /// can.
    pub fn try_full(shape: &[usize], v: T) -> Result<Self, ShapeError> {
        checked_size::<T>("full", shape, || format!("shape {shape:?}"))?;
        Ok(Self::from_array(ArrayD::from_elem(IxDyn(shape), v)))
    }

    /// The elements in row-major order.
    pub fn to_vec(&self) -> Vec<T> {
        self.data.iter().cloned().collect()
    }

    /// The only element of a one-element tensor.
    ///
    /// # Panics
    /// When the tensor does not have exactly one element.
    #[track_caller]
    pub fn item(&self) -> T {
        if self.len() != 1 {
            panic!(
                "item: the tensor has shape {:?} ({} elements); item needs exactly one",
                self.shape(),
                self.len()
            );
        }
        self.data.iter().next().cloned().expect("one element")
    }

    /// An owned ndarray copy of the data.
    pub fn to_array(&self) -> ArrayD<T> {
        self.data.to_owned()
    }

    /// Applies `f` to every element.
    pub fn map<U, F: FnMut(&T) -> U>(&self, f: F) -> Tensor<U> {
        Tensor::from_array(self.data.map(f))
    }

    /// [`Tensor::map`] for the ops: row-major data goes through one loop compiled for the CPU's
    /// vector instructions ([`crate::vmath::vectorised`]), which LLVM vectorises when `f` is
    /// inlined into it (mark the closure `#[inline(always)]`).
    pub(crate) fn map_elems<U: Clone>(&self, f: impl Fn(&T) -> U) -> Tensor<U> {
        match self.data.as_slice() {
            Some(s) if !s.is_empty() => {
                let mut out = vec![f(&s[0]); s.len()];
                crate::vmath::vectorised(
                    #[inline(always)]
                    || {
                        for (o, x) in out.iter_mut().zip(s) {
                            *o = f(x);
                        }
                    },
                );
                Tensor::from_array(
                    ArrayD::from_shape_vec(self.data.raw_dim(), out)
                        .expect("map: one element per element of the shape"),
                )
            }
            _ => self.map(f),
        }
    }

    /// `f` applied to the pairs of elements in the same position of `self` and `other`, which
    /// must have the same shape.
    ///
    /// Row-major operands (what nearly every op writes) go through their slices in one loop
    /// the compiler can vectorise (compiled as `map_elems`'s); others through `Zip`, whose set-up on dynamic-rank arrays
    /// costs more than the loop itself on tensors of a few dozen elements.
    pub(crate) fn zip_map<U, V: Clone>(
        &self,
        other: &Tensor<U>,
        f: impl Fn(&T, &U) -> V,
    ) -> Tensor<V> {
        debug_assert_eq!(self.shape(), other.shape(), "zip_map: shapes differ");
        if let (Some(a), Some(b)) = (self.data.as_slice(), other.data.as_slice()) {
            if a.is_empty() {
                return Tensor::from_array(
                    ArrayD::from_shape_vec(self.data.raw_dim(), Vec::new())
                        .expect("zip_map: no elements"),
                );
            }
            let mut out = vec![f(&a[0], &b[0]); a.len()];
            crate::vmath::vectorised(
                #[inline(always)]
                || {
                    for ((o, u), v) in out.iter_mut().zip(a).zip(b) {
                        *o = f(u, v);
                    }
                },
            );
            return Tensor::from_array(
                ArrayD::from_shape_vec(self.data.raw_dim(), out)
                    .expect("zip_map: one element per element of the shape"),
            );
        }
        Tensor::from_array(
            ndarray::Zip::from(&self.data)
                .and(&other.data)
                .map_collect(f),
        )
    }
}

impl<T: Clone + Zero> Tensor<T> {
    /// A tensor of zeros.
    ///
    /// # Panics
    /// When `shape` holds more elements than a tensor can.
    #[track_caller]
    pub fn zeros(shape: &[usize]) -> Self {
        Self::try_zeros(shape).or_panic()
    }

    /// Like [`Tensor::zeros`], returning an error when `shape` holds more elements than a
    /// tensor can.
    pub fn try_zeros(shape: &[usize]) -> Result<Self, ShapeError> {
        checked_size::<T>("zeros", shape, || format!("shape {shape:?}"))?;
        Ok(Self::from_array(ArrayD::zeros(IxDyn(shape))))
    }
}

impl<T: Clone + One> Tensor<T> {
    /// A tensor of ones.
    ///
    /// # Panics
    /// When `shape` holds more elements than a tensor can.
    #[track_caller]
    pub fn ones(shape: &[usize]) -> Self {
        Self::try_ones(shape).or_panic()
    }

    /// Like [`Tensor::ones`], returning an error when `shape` holds more elements than a tensor
    /// can.
    pub fn try_ones(shape: &[usize]) -> Result<Self, ShapeError> {
        checked_size::<T>("ones", shape, || format!("shape {shape:?}"))?;
        Ok(Self::from_array(ArrayD::ones(IxDyn(shape))))
    }
}

impl<T: fmt::Debug> fmt::Debug for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tensor(shape={:?}, {:?})", self.shape(), self.data)
    }
}

impl<T: fmt::Display> fmt::Display for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.data, f)
    }
}
