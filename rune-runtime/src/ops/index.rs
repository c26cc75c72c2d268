//! Indexing ops: `gather` and `scatter_add` along an axis, with PyTorch's `torch.gather` /
//! `torch.scatter_add` semantics; `index_select` of whole slices along an axis and the row
//! lookup `embedding`, as PyTorch's `index_select` and `F.embedding`.
//!
//! `gather`'s `indices` is a `Tensor<i64>` with as many axes as the data; along every other axis
//! it may be shorter than the data (the leading part is used). `index_select` and `embedding`
//! take any [`Indices`]: a `Tensor<i64>` or a list of integers. Indices are not wrapped: a
//! negative or too-large index is an error naming the op, the index and the shape.

use std::borrow::Cow;
use std::ops::AddAssign;

use ndarray::{ArrayD, Axis, IxDyn, Slice, Zip};
use smallvec::SmallVec;

use crate::copy::extend_elems;
use crate::element::Element;
use crate::error::{panicking_twin, OrPanic, ShapeError};
use crate::ops::normalize_axis;
use crate::tensor::Tensor;

/// Checks `axis` and the shape and values of `indices` against data of shape `shape`; returns
/// the normalised axis.
fn check_indices(
    op: &'static str,
    shape: &[usize],
    axis: isize,
    indices: &Tensor<i64>,
) -> Result<usize, ShapeError> {
    let a = normalize_axis(op, axis, shape.len()).map_err(|_| {
        ShapeError::new(
            op,
            format!("axis {axis} is out of range for shape {shape:?}"),
        )
    })?;
    let is = indices.shape();
    let fits = is.len() == shape.len()
        && is
            .iter()
            .zip(shape)
            .enumerate()
            .all(|(i, (&n, &m))| i == a || n <= m);
    if !fits {
        return Err(ShapeError::new(
            op,
            format!(
                "indices of shape {is:?} must have the {} axes of shape {shape:?} and be no \
                 longer on any axis but axis {a}",
                shape.len()
            ),
        ));
    }
    let len = shape[a];
    if let Some(&bad) = indices
        .view()
        .iter()
        .find(|&&i| i < 0 || i as u64 >= len as u64)
    {
        return Err(ShapeError::new(
            op,
            format!("index {bad} is out of range for axis {a} (length {len}) of shape {shape:?}"),
        ));
    }
    Ok(a)
}

/// The indices of [`Tensor::index_select`] and [`embedding`]: a `Tensor<i64>`, or a slice,
/// array or `Vec` of `usize`, `isize`, `i32` or `i64` (a 1-D list; untyped literals such as
/// `&[0, 2, 2]` are `i32`s).
pub trait Indices {
    /// The indices as a tensor, a list as a 1-D one.
    #[doc(hidden)]
    fn index_tensor(&self) -> Cow<'_, Tensor<i64>>;
}

impl Indices for Tensor<i64> {
    fn index_tensor(&self) -> Cow<'_, Tensor<i64>> {
        Cow::Borrowed(self)
    }
}

impl<X: Indices + ?Sized> Indices for &X {
    fn index_tensor(&self) -> Cow<'_, Tensor<i64>> {
        (**self).index_tensor()
    }
}

macro_rules! index_lists {
    ($($t:ty),*) => {$(
        impl Indices for [$t] {
            fn index_tensor(&self) -> Cow<'_, Tensor<i64>> {
                // An index past `i64::MAX` is out of range of any axis: `i64::MAX` says so.
                let list = self.iter().map(|&i| i64::try_from(i).unwrap_or(i64::MAX)).collect();
                Cow::Owned(Tensor::from_vec(list, &[self.len()]))
            }
        }
        impl<const N: usize> Indices for [$t; N] {
            fn index_tensor(&self) -> Cow<'_, Tensor<i64>> {
                self[..].index_tensor()
            }
        }
        impl Indices for Vec<$t> {
            fn index_tensor(&self) -> Cow<'_, Tensor<i64>> {
                self[..].index_tensor()
            }
        }
        /// The form in which the backward pass of generated code keeps a slice of indices.
        impl Indices for SmallVec<[$t; 4]> {
            fn index_tensor(&self) -> Cow<'_, Tensor<i64>> {
                self[..].index_tensor()
            }
        }
    )*};
}
index_lists!(usize, isize, i32, i64);

/// `indices` as positions along an axis of length `len` (axis `a` of `shape`), or an error of
/// `op` naming the first index out of range.
fn positions(
    op: &'static str,
    shape: &[usize],
    a: usize,
    indices: &Tensor<i64>,
) -> Result<Vec<usize>, ShapeError> {
    let len = shape[a];
    let out_of_range = |i: i64| {
        ShapeError::new(
            op,
            format!("index {i} is out of range for axis {a} (length {len}) of shape {shape:?}"),
        )
    };
    // Row-major indices (every list an op returns, `argmin`'s): one pass over the slice that
    // vectorises, then the conversion; the strided walk of an `IxDyn` view cost ~1.6 ns an
    // index, a tenth of `index_select` on the rows of a small matrix.
    if let Some(list) = indices.as_slice() {
        if let Some(&i) = list.iter().find(|&&i| i as u64 >= len as u64) {
            return Err(out_of_range(i));
        }
        return Ok(list.iter().map(|&i| i as usize).collect());
    }
    indices
        .view()
        .iter()
        .map(|&i| {
            if i as u64 >= len as u64 {
                Err(out_of_range(i))
            } else {
                Ok(i as usize)
            }
        })
        .collect()
}

/// The axis and positions of `index_select` on data of shape `shape`: a 1-D (or 0-d) list.
fn select_positions(
    shape: &[usize],
    axis: isize,
    indices: &Tensor<i64>,
) -> Result<(usize, Vec<usize>), ShapeError> {
    let op = "index_select";
    let a = normalize_axis(op, axis, shape.len()).map_err(|_| {
        ShapeError::new(
            op,
            format!("axis {axis} is out of range for shape {shape:?}"),
        )
    })?;
    if indices.ndim() > 1 {
        return Err(ShapeError::new(
            op,
            format!(
                "indices of shape {:?} must be a 1-D list (data shape {shape:?}); `embedding` \
                 takes indices of any shape",
                indices.shape()
            ),
        ));
    }
    Ok((a, positions(op, shape, a, indices)?))
}

/// The most bytes of a run [`select_rows`] copies by a loop of its own, not `memcpy`.
const SHORT_RUN: usize = 256;

/// The slices at `rows` along axis `a` of data `x`, as [`Tensor::index_select`] returns them.
/// Row-major data is copied a run at a time: for every position before the axis, each selected
/// slice is one contiguous run of the elements after it.
fn select_rows<T: Clone>(x: &Tensor<T>, a: usize, rows: &[usize]) -> Tensor<T> {
    let shape = x.shape();
    let mut out_shape = shape.to_vec();
    out_shape[a] = rows.len();
    let Some(src) = x.as_slice() else {
        return Tensor::from_array(x.view().select(Axis(a), rows));
    };
    let inner: usize = shape[a + 1..].iter().product();
    let (len, outer) = (shape[a], shape[..a].iter().product::<usize>());
    let mut out = Vec::with_capacity(outer * rows.len() * inner);
    // A short run (a point of a few coordinates) is copied by a loop of its own: a call of
    // `memcpy` for each costs more than the copy.
    let short = std::mem::size_of::<T>() * inner <= SHORT_RUN;
    crate::vmath::vectorised(
        #[inline(always)]
        || {
            for o in 0..outer {
                let block = &src[o * len * inner..(o + 1) * len * inner];
                for &r in rows {
                    let run = &block[r * inner..(r + 1) * inner];
                    if short {
                        out.extend(run.iter().cloned());
                    } else {
                        extend_elems(&mut out, run);
                    }
                }
            }
        },
    );
    Tensor::from_vec(out, &out_shape)
}

/// Zeros of shape `shape` with slice `j` of `g` along axis `a` added at slice `rows[j]`
/// (repeated rows accumulate): the adjoint of selecting `rows`. A row-major `g` is added a run
/// at a time, as [`select_rows`] copies.
fn add_rows<T: Element>(g: &Tensor<T>, shape: &[usize], a: usize, rows: &[usize]) -> Tensor<T> {
    let Some(src) = g.as_slice() else {
        let mut out = ArrayD::from_elem(IxDyn(shape), T::zero());
        let g = g.view();
        for (j, &r) in rows.iter().enumerate() {
            let mut dst = out.index_axis_mut(Axis(a), r);
            dst += &g.index_axis(Axis(a), j);
        }
        return Tensor::from_array(out);
    };
    let inner: usize = shape[a + 1..].iter().product();
    let (len, outer) = (shape[a], shape[..a].iter().product::<usize>());
    let mut out = vec![T::zero(); outer * len * inner];
    crate::vmath::vectorised(
        #[inline(always)]
        || {
            for o in 0..outer {
                let block = &mut out[o * len * inner..(o + 1) * len * inner];
                let from = &src[o * rows.len() * inner..(o + 1) * rows.len() * inner];
                for (j, &r) in rows.iter().enumerate() {
                    let dst = &mut block[r * inner..(r + 1) * inner];
                    for (d, &s) in dst.iter_mut().zip(&from[j * inner..(j + 1) * inner]) {
                        *d += s;
                    }
                }
            }
        },
    );
    Tensor::from_vec(out, shape)
}

impl<T: Clone> Tensor<T> {
    panicking_twin! {
        /// The slices at `indices` along `axis` (PyTorch's `x.index_select(axis, indices)`,
        /// `jnp.take(x, indices, axis)` of a list): the result has the tensor's shape with axis
        /// `axis` as long as the list. Indices may repeat.
        ///
        /// # Panics
        /// When `axis` is out of range, `indices` has more than one axis, or an index is negative
        /// or past the axis' end; the message names the op, the index and the shape.
        pub fn index_select<I: Indices + ?Sized>(&self, axis: isize, indices: &I) -> Tensor<T>
            => self.try_index_select
    }

    /// Like [`Tensor::index_select`], returning an error for bad indices.
    pub fn try_index_select<I: Indices + ?Sized>(
        &self,
        axis: isize,
        indices: &I,
    ) -> Result<Tensor<T>, ShapeError> {
        let indices = indices.index_tensor();
        let (a, rows) = select_positions(self.shape(), axis, &indices)?;
        if let Some(t) = self.per_example(a > 0, |e| e.try_index_select(a as isize - 1, &*indices))
        {
            return t;
        }
        Ok(select_rows(self, a, &rows))
    }
}

panicking_twin! {
    /// The rows of `weight` (`[rows, dim]`) at `indices` (PyTorch's `F.embedding(indices,
    /// weight)`, arguments in its order): the result has shape `indices.shape() + [dim]`, a list
    /// `[len, dim]`. Indices may repeat; the gradient of a row read twice is the sum of both.
    ///
    /// # Panics
    /// When `weight` is not 2-D or an index is negative or past its rows; the message names the
    /// op, the index and the shapes.
    pub fn embedding<T, I>(indices: &I, weight: &Tensor<T>) -> Tensor<T>
    where
        T: Clone,
        I: Indices + ?Sized,
    => try_embedding
}

/// Like [`embedding`], returning an error for bad indices or a weight that is not 2-D.
pub fn try_embedding<T, I>(indices: &I, weight: &Tensor<T>) -> Result<Tensor<T>, ShapeError>
where
    T: Clone,
    I: Indices + ?Sized,
{
    let indices = indices.index_tensor();
    let (rows, shape) = embedding_positions(&indices, weight.shape())?;
    Ok(select_rows(weight, 0, &rows).reshape(&shape))
}

/// The rows `embedding` reads and the shape of its result.
fn embedding_positions(
    indices: &Tensor<i64>,
    weight: &[usize],
) -> Result<(Vec<usize>, Vec<usize>), ShapeError> {
    if weight.len() != 2 {
        return Err(ShapeError::new(
            "embedding",
            format!(
                "weight of shape {weight:?} must be 2-D, [rows, dim] (indices of shape {:?})",
                indices.shape()
            ),
        ));
    }
    let rows = positions("embedding", weight, 0, indices)?;
    let mut shape = indices.shape().to_vec();
    shape.push(weight[1]);
    Ok((rows, shape))
}

impl<T: Clone + Default> Tensor<T> {
    panicking_twin! {
        /// Values taken along `axis` at `indices` (`torch.gather`): with `axis = 1` on 3-D data,
        /// `out[i][j][k] = x[i][indices[i][j][k]][k]`. The result has `indices`' shape.
        ///
        /// # Panics
        /// When `axis` is out of range, `indices` does not have the data's number of axes or is
        /// longer than the data on another axis, or an index is negative or past the axis' end.
        pub fn gather(&self, axis: isize, indices: &Tensor<i64>) -> Tensor<T> => self.try_gather
    }

    /// Like [`Tensor::gather`], returning an error for bad indices.
    pub fn try_gather(&self, axis: isize, indices: &Tensor<i64>) -> Result<Tensor<T>, ShapeError> {
        // A list taken from a list: one pass, each index checked as it is read.
        if let (Some(src), Some(idx), 1, 1, 0 | -1) = (
            self.as_slice(),
            indices.as_slice(),
            self.ndim(),
            indices.ndim(),
            axis,
        ) {
            let out = idx
                .iter()
                .map(|&i| usize::try_from(i).ok().and_then(|i| src.get(i)).cloned())
                .collect::<Option<Vec<T>>>();
            return match out {
                Some(out) => Ok(Tensor::from_vec(out, indices.shape())),
                // The index out of range, named as the general path names it.
                None => Err(check_indices("gather", self.shape(), axis, indices)
                    .expect_err("an index out of range was found")),
            };
        }
        let a = check_indices("gather", self.shape(), axis, indices)?;
        let is = indices.shape();
        let view = self.view();
        let src = view.slice_each_axis(|ad| {
            let i = ad.axis.index();
            if i == a {
                Slice::from(..)
            } else {
                Slice::from(..is[i])
            }
        });
        let mut out = ArrayD::<T>::default(IxDyn(is));
        Zip::from(out.lanes_mut(Axis(a)))
            .and(indices.view().lanes(Axis(a)))
            .and(src.lanes(Axis(a)))
            .for_each(|out, idx, src| {
                for (o, &i) in out.into_iter().zip(idx) {
                    *o = src[i as usize].clone();
                }
            });
        Ok(Tensor::from_array(out))
    }
}

impl<T: Clone + AddAssign> Tensor<T> {
    panicking_twin! {
        /// A copy of the tensor with `updates` added along `axis` at `indices`
        /// (`torch.scatter_add`): with `axis = 0` on 2-D data, `y[indices[i][j]][j] +=
        /// updates[i][j]`. Repeated indices accumulate. `updates` has `indices`' shape.
        ///
        /// # Panics
        /// When `axis` is out of range, `updates` and `indices` differ in shape, `indices` does not
        /// have the data's number of axes or is longer than the data on another axis, or an index
        /// is negative or past the axis' end.
        pub fn scatter_add(
            &self,
            axis: isize,
            indices: &Tensor<i64>,
            updates: &Tensor<T>,
        ) -> Tensor<T> => self.try_scatter_add
    }

    /// Like [`Tensor::scatter_add`], returning an error for bad indices or shapes.
    pub fn try_scatter_add(
        &self,
        axis: isize,
        indices: &Tensor<i64>,
        updates: &Tensor<T>,
    ) -> Result<Tensor<T>, ShapeError> {
        if updates.shape() != indices.shape() {
            return Err(ShapeError::new(
                "scatter_add",
                format!(
                    "updates of shape {:?} must have the indices' shape {:?} (data shape {:?})",
                    updates.shape(),
                    indices.shape(),
                    self.shape()
                ),
            ));
        }
        let a = check_indices("scatter_add", self.shape(), axis, indices)?;
        let is = indices.shape();
        let mut out = self.view().to_owned();
        {
            let mut dst = out.slice_each_axis_mut(|ad| {
                let i = ad.axis.index();
                if i == a {
                    Slice::from(..)
                } else {
                    Slice::from(..is[i])
                }
            });
            Zip::from(dst.lanes_mut(Axis(a)))
                .and(indices.view().lanes(Axis(a)))
                .and(updates.view().lanes(Axis(a)))
                .for_each(|mut dst, idx, upd| {
                    for (&i, u) in idx.iter().zip(upd) {
                        dst[i as usize] += u.clone();
                    }
                });
        }
        Ok(Tensor::from_array(out))
    }
}

// ---- rules ----------------------------------------------------------------------------------
//
// Every op is linear in its data arguments.
//
// | op          | JVP                                       | VJP                                  |
// |-------------|-------------------------------------------|--------------------------------------|
// | gather      | dx.gather(axis, indices)                  | zeros(x_shape).scatter_add(.., g)    |
// | scatter_add | dx.scatter_add(axis, indices, dupdates)   | input: g; updates: g.gather(..)      |
// | index_select| dx.index_select(axis, indices)            | zeros with g's slices added at them  |
// | embedding   | embedding(indices, dweight)               | zeros with g's rows added at them    |

/// Rules of the indexing ops (see the module's table).
pub mod rules {
    use super::*;

    /// JVP of `x.gather(axis, indices)`.
    #[track_caller]
    pub fn gather_jvp<T: Element>(axis: isize, indices: &Tensor<i64>, dx: &Tensor<T>) -> Tensor<T> {
        dx.gather(axis, indices)
    }
    /// VJP of `x.gather(axis, indices)`: `g` scatter-added into zeros of `x`'s shape (repeated
    /// indices accumulate).
    #[track_caller]
    pub fn gather_vjp<T: Element>(
        g: &Tensor<T>,
        x_shape: &[usize],
        axis: isize,
        indices: &Tensor<i64>,
    ) -> Tensor<T> {
        // A list taken from a list: added into zeros in one pass, each index checked as read.
        if let (Some(upd), Some(idx), 1, 1, 1, 0 | -1) = (
            g.as_slice(),
            indices.as_slice(),
            x_shape.len(),
            g.ndim(),
            indices.ndim(),
            axis,
        ) {
            if upd.len() == idx.len() {
                let mut out = vec![T::zero(); x_shape[0]];
                let mut all_in = true;
                for (&i, &u) in idx.iter().zip(upd) {
                    match usize::try_from(i).ok().and_then(|i| out.get_mut(i)) {
                        Some(o) => *o += u,
                        None => all_in = false,
                    }
                }
                if all_in {
                    return Tensor::from_vec(out, x_shape);
                }
            }
        }
        Tensor::zeros(x_shape).scatter_add(axis, indices, g)
    }

    /// JVP of `y = x.scatter_add(axis, indices, updates)`; a `None` tangent (a constant input)
    /// counts as zeros.
    #[track_caller]
    pub fn scatter_add_jvp<T: Element>(
        y: &Tensor<T>,
        axis: isize,
        indices: &Tensor<i64>,
        dx: Option<&Tensor<T>>,
        dupdates: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        match (dx, dupdates) {
            (Some(dx), Some(du)) => dx.scatter_add(axis, indices, du),
            (Some(dx), None) => dx.clone(),
            (None, Some(du)) => Tensor::zeros(y.shape()).scatter_add(axis, indices, du),
            (None, None) => Tensor::zeros(y.shape()),
        }
    }
    /// VJP of `x.scatter_add(axis, indices, updates)` for `x`: `g` itself.
    pub fn scatter_add_vjp_input<T: Element>(g: &Tensor<T>) -> Tensor<T> {
        g.clone()
    }
    /// VJP of `x.scatter_add(axis, indices, updates)` for `updates`: `g` gathered at `indices`.
    #[track_caller]
    pub fn scatter_add_vjp_updates<T: Element>(
        g: &Tensor<T>,
        axis: isize,
        indices: &Tensor<i64>,
    ) -> Tensor<T> {
        g.gather(axis, indices)
    }

    /// JVP of `x.index_select(axis, indices)`.
    #[track_caller]
    pub fn index_select_jvp<T: Element, I: Indices + ?Sized>(
        axis: isize,
        indices: &I,
        dx: &Tensor<T>,
    ) -> Tensor<T> {
        dx.index_select(axis, indices)
    }
    /// VJP of `x.index_select(axis, indices)`: slice `j` of `g` added into zeros of `x`'s
    /// shape at slice `indices[j]` (repeated indices accumulate).
    #[track_caller]
    pub fn index_select_vjp<T: Element, I: Indices + ?Sized>(
        g: &Tensor<T>,
        x_shape: &[usize],
        axis: isize,
        indices: &I,
    ) -> Tensor<T> {
        let (a, rows) = select_positions(x_shape, axis, &indices.index_tensor()).or_panic();
        add_rows(g, x_shape, a, &rows)
    }

    /// JVP of `embedding(indices, weight)`.
    #[track_caller]
    pub fn embedding_jvp<T: Element, I: Indices + ?Sized>(
        indices: &I,
        dweight: &Tensor<T>,
    ) -> Tensor<T> {
        embedding(indices, dweight)
    }
    /// VJP of `embedding(indices, weight)`: row `j` of `g` (flattened to `[len, dim]`) added into
    /// zeros of the weight's shape at row `indices[j]` (repeated indices accumulate).
    #[track_caller]
    pub fn embedding_vjp<T: Element, I: Indices + ?Sized>(
        g: &Tensor<T>,
        weight_shape: &[usize],
        indices: &I,
    ) -> Tensor<T> {
        let (rows, _) = embedding_positions(&indices.index_tensor(), weight_shape).or_panic();
        let g = g.reshape(&[rows.len(), weight_shape[1]]);
        add_rows(&g, weight_shape, 0, &rows)
    }
}
