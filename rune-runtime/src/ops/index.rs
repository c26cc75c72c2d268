//! Indexing ops: `gather` and `scatter_add` along an axis, with PyTorch's `torch.gather` /
//! `torch.scatter_add` semantics.
//!
//! `indices` is a `Tensor<i64>` with as many axes as the data; along every other axis it may be
//! shorter than the data (the leading part is used). Indices are not wrapped: a negative or
//! too-large index is an error naming the op, the index and the shape.

use std::ops::AddAssign;

use ndarray::{ArrayD, Axis, IxDyn, Slice, Zip};

use crate::element::Element;
use crate::error::{panicking_twin, ShapeError};
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
// Both ops are linear in their data arguments.
//
// | op          | JVP                                       | VJP                                  |
// |-------------|-------------------------------------------|--------------------------------------|
// | gather      | dx.gather(axis, indices)                  | zeros(x_shape).scatter_add(.., g)    |
// | scatter_add | dx.scatter_add(axis, indices, dupdates)   | input: g; updates: g.gather(..)      |

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
}
