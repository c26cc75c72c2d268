//! `Tensor<T>`: an n-dimensional array with shared, copy-on-write storage.
//!
//! Construction, access and conversion live here; the ops live in [`crate::ops`].

use std::fmt;

use ndarray::{ArcArray, Array0, Array1, Array2, ArrayD, ArrayViewD, IxDyn};
use num_traits::{One, Zero};

use crate::error::{checked_size, OrPanic, ShapeError};
use crate::vmath::{fast_then_exact, Kernels};

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
        Ok(Self::from_parts(data, shape))
    }

    /// A tensor of `shape` holding `data` in row-major order, where the caller has made
    /// `data.len()` the product of `shape` (an op's result of its operand's shape).
    ///
    /// Up to two axes, the array is built with a static rank and then given its dynamic one,
    /// which skips most of the checks and conversions of a dynamic-rank shape: on a tensor of
    /// 16 elements, building it cost several times the arithmetic of an op.
    pub(crate) fn from_parts(data: Vec<T>, shape: &[usize]) -> Self {
        debug_assert_eq!(data.len(), shape.iter().product::<usize>(), "from_parts");
        let array = match *shape {
            [] => Array0::from_shape_vec((), data).map(|a| a.into_dyn()),
            [n] => Array1::from_shape_vec(n, data).map(|a| a.into_dyn()),
            [m, n] => Array2::from_shape_vec((m, n), data).map(|a| a.into_dyn()),
            _ => ArrayD::from_shape_vec(IxDyn(shape), data),
        };
        Self::from_array(array.expect("from_parts: one element per element of the shape"))
    }

    /// A 0-d tensor holding `v`.
    pub fn scalar(v: T) -> Self {
        Self::from_array(Array0::from_elem((), v).into_dyn())
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
        self.data.first().cloned().expect("one element")
    }

    /// An owned ndarray copy of the data.
    pub fn to_array(&self) -> ArrayD<T> {
        self.data.to_owned()
    }

    /// Applies `f` to every element. The result is row-major whatever `self`'s layout, as every
    /// elementwise op's is: a fused region writes its values in row-major order, and the same
    /// ops one by one must give the same tensor.
    pub fn map<U, F: FnMut(&T) -> U>(&self, f: F) -> Tensor<U> {
        if self.data.is_standard_layout() {
            return Tensor::from_array(self.data.map(f));
        }
        // ndarray's `map` keeps the memory order of a view that is contiguous in another order
        // (`t`, `permute`, `flip`, `concat` along an inner axis).
        let data: Vec<U> = self.data.iter().map(f).collect();
        Tensor::from_array(
            ArrayD::from_shape_vec(self.data.raw_dim(), data).expect("map: one value an element"),
        )
    }

    /// [`Tensor::map`] for the ops: row-major data goes through one loop compiled for the CPU's
    /// vector instructions ([`crate::vmath::vectorised`]), which LLVM vectorises when `f` is
    /// inlined into it (mark the closure `#[inline(always)]`).
    pub(crate) fn map_elems<U: Clone>(&self, f: impl Fn(&T) -> U) -> Tensor<U> {
        match self.data.as_slice() {
            // One element (a 0-d tensor): no loop to vectorise.
            Some([x]) => Tensor::from_parts(vec![f(x)], self.shape()),
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
                Tensor::from_parts(out, self.shape())
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
    ///
    /// The result is row-major whatever the operands' layouts, as every elementwise op's is: a
    /// fused region of `#[differentiable]` code writes its values (or sums them) in row-major
    /// order, and the same region op by op must give the same tensor, to the order in which a
    /// later `sum` adds it (`sum` adds a contiguous tensor in its memory order).
    pub(crate) fn zip_map<U, V: Clone>(
        &self,
        other: &Tensor<U>,
        f: impl Fn(&T, &U) -> V,
    ) -> Tensor<V> {
        debug_assert_eq!(self.shape(), other.shape(), "zip_map: shapes differ");
        if let (Some(a), Some(b)) = (self.data.as_slice(), other.data.as_slice()) {
            match (a, b) {
                ([], _) => return Tensor::from_parts(Vec::new(), self.shape()),
                // One element (a 0-d tensor): no loop to vectorise.
                ([u], [v]) => return Tensor::from_parts(vec![f(u, v)], self.shape()),
                _ => {}
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
            return Tensor::from_parts(out, self.shape());
        }
        Tensor::from_array(row_major(
            ndarray::Zip::from(&self.data)
                .and(&other.data)
                .map_collect(f),
        ))
    }
}

impl<T: Clone> Tensor<T> {
    /// [`Tensor::map_elems`] for a function of the kernels of a loop's pass ([`Kernels`]): each
    /// block of [`KERNEL_BLOCK`] elements runs with the fast kernels, and again with the
    /// full-range ones when one of them met an argument outside its range.
    pub(crate) fn map_elems_in<U: Clone>(&self, f: impl Fn(&T, &Kernels) -> U) -> Tensor<U> {
        match self.data.as_slice() {
            Some([x]) => Tensor::from_parts(vec![fast_then_exact(|k| f(x, k))], self.shape()),
            Some(s) if !s.is_empty() => {
                let mut out = vec![f(&s[0], &Kernels::exact()); s.len()];
                crate::vmath::vectorised(
                    #[inline(always)]
                    || {
                        for (o, x) in out.chunks_mut(KERNEL_BLOCK).zip(s.chunks(KERNEL_BLOCK)) {
                            fast_then_exact(
                                #[inline(always)]
                                |k| {
                                    for (o, x) in o.iter_mut().zip(x) {
                                        *o = f(x, k);
                                    }
                                },
                            );
                        }
                    },
                );
                Tensor::from_parts(out, self.shape())
            }
            _ => self.map(|x| f(x, &Kernels::exact())),
        }
    }

    /// [`Tensor::zip_map`] for a function of the kernels of a loop's pass, in blocks as
    /// [`Tensor::map_elems_in`].
    pub(crate) fn zip_map_in<U, V: Clone>(
        &self,
        other: &Tensor<U>,
        f: impl Fn(&T, &U, &Kernels) -> V,
    ) -> Tensor<V> {
        debug_assert_eq!(self.shape(), other.shape(), "zip_map_in: shapes differ");
        if let (Some(a), Some(b)) = (self.data.as_slice(), other.data.as_slice()) {
            match (a, b) {
                ([], _) => return Tensor::from_parts(Vec::new(), self.shape()),
                ([u], [v]) => {
                    let y = fast_then_exact(|k| f(u, v, k));
                    return Tensor::from_parts(vec![y], self.shape());
                }
                _ => {}
            }
            let mut out = vec![f(&a[0], &b[0], &Kernels::exact()); a.len()];
            crate::vmath::vectorised(
                #[inline(always)]
                || {
                    let blocks = out.chunks_mut(KERNEL_BLOCK);
                    for ((o, u), v) in blocks
                        .zip(a.chunks(KERNEL_BLOCK))
                        .zip(b.chunks(KERNEL_BLOCK))
                    {
                        fast_then_exact(
                            #[inline(always)]
                            |k| {
                                for ((o, u), v) in o.iter_mut().zip(u).zip(v) {
                                    *o = f(u, v, k);
                                }
                            },
                        );
                    }
                },
            );
            return Tensor::from_parts(out, self.shape());
        }
        let exact = Kernels::exact();
        Tensor::from_array(row_major(
            ndarray::Zip::from(&self.data)
                .and(&other.data)
                .map_collect(|u, v| f(u, v, &exact)),
        ))
    }
}

/// An elementwise op's result in row-major order (see [`Tensor::zip_map`]): `Zip` writes
/// operands laid out column-major (`t`, `concat` along an inner axis) in their order. A copy
/// only then.
pub(crate) fn row_major<T: Clone>(a: ArrayD<T>) -> ArrayD<T> {
    if a.is_standard_layout() {
        a
    } else {
        a.as_standard_layout().into_owned()
    }
}

/// The elements [`Tensor::map_elems_in`] runs with one pass of the kernels.
const KERNEL_BLOCK: usize = 64;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_parts_builds_the_array_from_vec_builds() {
        for shape in [
            &[][..],
            &[5],
            &[0],
            &[2, 3],
            &[3, 0],
            &[2, 1, 3],
            &[1, 2, 0, 2],
            &[2, 1, 2, 1, 2],
        ] {
            let n: usize = shape.iter().product();
            let data: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 1.0).collect();
            let fast = Tensor::from_parts(data.clone(), shape);
            let general = ArrayD::from_shape_vec(IxDyn(shape), data.clone()).expect("valid");
            assert_eq!(fast.shape(), shape);
            assert_eq!(fast.as_shared().strides(), general.strides(), "{shape:?}");
            assert_eq!(fast.to_vec(), data);
            assert_eq!(fast.as_shared(), &general.into_shared());
        }
    }
}
