//! Conversions between [`Tensor`] and ndarray arrays of any dimension, `Vec`s and slices: each
//! one copies only when it must (a view of shared storage, data that is not row-major).

use ndarray::{ArcArray, Array, ArrayBase, ArrayD, ArrayViewD, Data, Dimension, IxDyn};

use super::{Repr, Tensor};

impl<T> Tensor<T> {
    /// A read-only ndarray view of the data, without copying: the same as [`Tensor::view`].
    ///
    /// A view of a fixed dimension is one `into_dimensionality` away:
    ///
    /// ```
    /// use rune_runtime::{ndarray::Ix2, Tensor};
    /// let t = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    /// let m = t.as_array().into_dimensionality::<Ix2>().unwrap();
    /// assert_eq!(m[[1, 0]], 4.0);
    /// ```
    #[inline]
    pub fn as_array(&self) -> ArrayViewD<'_, T> {
        self.view()
    }
}

impl<T: Clone> Tensor<T> {
    /// The data as an owned ndarray array: without copying when this tensor is the only owner
    /// of its storage, a copy when its storage is shared with clones ([`Tensor::to_array`]
    /// always copies).
    ///
    /// ```
    /// use rune_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![1.0, 2.0], &[2]).into_array();
    /// assert_eq!(a.as_slice().unwrap(), &[1.0, 2.0]);
    /// ```
    pub fn into_array(self) -> ArrayD<T> {
        match self.repr {
            Repr::Shared(a) => a.into_owned(),
            Repr::Inline(i) => {
                let shape = IxDyn(i.shape());
                ArrayD::from_shape_vec(shape, i.data.into_iter().collect()).expect("inline")
            }
            Repr::Repeated(_) => self.view().to_owned(),
            Repr::Padded(p) => p.owned().into_owned(),
        }
    }

    /// The elements in row-major order, without copying when this tensor is the only owner of
    /// row-major storage that holds nothing else.
    pub fn into_vec(self) -> Vec<T> {
        let array = self.into_array();
        if array.is_standard_layout() {
            let len = array.len();
            let (data, offset) = array.into_raw_vec_and_offset();
            if offset.unwrap_or(0) == 0 && data.len() == len {
                return data;
            }
            // Standard layout over a larger buffer (a slice kept in place): copy the part.
            let start = offset.unwrap_or(0);
            return data[start..start + len].to_vec();
        }
        array.iter().cloned().collect()
    }
}

/// An array of any dimension becomes a tensor of the same shape, without copying.
impl<T, D: Dimension> From<Array<T, D>> for Tensor<T> {
    fn from(data: Array<T, D>) -> Self {
        Tensor::from_array(data.into_dyn())
    }
}

/// Shared ndarray storage of any dimension becomes a tensor sharing it.
impl<T, D: Dimension> From<ArcArray<T, D>> for Tensor<T> {
    fn from(data: ArcArray<T, D>) -> Self {
        Tensor::from_shared(data.into_dyn())
    }
}

/// A view (or any borrowed array) of any dimension is copied into a new tensor.
impl<T: Clone, S: Data<Elem = T>, D: Dimension> From<&ArrayBase<S, D>> for Tensor<T> {
    fn from(data: &ArrayBase<S, D>) -> Self {
        Tensor::from_array(data.to_owned().into_dyn())
    }
}

/// A tensor becomes an ndarray array of dynamic dimension ([`Tensor::into_array`]).
impl<T: Clone> From<Tensor<T>> for ArrayD<T> {
    fn from(tensor: Tensor<T>) -> Self {
        tensor.into_array()
    }
}

/// A `Vec` becomes a 1-d tensor of its elements, without copying.
impl<T> From<Vec<T>> for Tensor<T> {
    fn from(data: Vec<T>) -> Self {
        Tensor::from_array(ArrayD::from_shape_vec(IxDyn(&[data.len()]), data).expect("1-d"))
    }
}

/// A slice is copied into a 1-d tensor.
impl<T: Clone> From<&[T]> for Tensor<T> {
    fn from(data: &[T]) -> Self {
        Tensor::from(data.to_vec())
    }
}

/// An array becomes a 1-d tensor of its elements (`Tensor::from([a, b])`).
impl<T, const N: usize> From<[T; N]> for Tensor<T> {
    fn from(data: [T; N]) -> Self {
        Tensor::from(Vec::from(data))
    }
}

/// A tensor's elements in row-major order ([`Tensor::into_vec`]).
impl<T: Clone> From<Tensor<T>> for Vec<T> {
    fn from(tensor: Tensor<T>) -> Self {
        tensor.into_vec()
    }
}
