//! Shape ops: `reshape`, `permute`, `transpose`, `t`, `broadcast_to`, `expand_dims`, `squeeze`.
//!
//! `permute`, `t`, `expand_dims` and `squeeze` return views of the same storage (no copy); the
//! result may then have a non-standard memory layout, which every op accepts (an elementwise
//! op's result is row-major whatever its operands' layouts). `reshape` is free
//! on a row-major tensor and copies into row-major order otherwise (a permuted or flipped
//! tensor), so it always follows the logical row-major element order, as NumPy's does.
//! `broadcast_to` materialises the broadcast result.
//!
//! The shape ops work on tensors of any element type (`bool` masks and `i64` indices too).

use std::borrow::Cow;

use ndarray::{ArrayViewD, Axis, IxDyn};

use crate::broadcast::{broadcast_view, materialize, same_shape, sum_to_shape};
use crate::copy::extend_elems;
use crate::element::Element;
use crate::error::{checked_size, panicking_twin, ShapeError};
use crate::ops::normalize_axis;
use crate::tensor::{small, Tensor};

/// `axis` (negative counts from the end) as the position of a new axis among `ndim + 1`.
fn insert_position(op: &'static str, axis: isize, shape: &[usize]) -> Result<usize, ShapeError> {
    let n = shape.len() as isize;
    let a = if axis < 0 { axis + n + 1 } else { axis };
    if a < 0 || a > n {
        return Err(ShapeError::new(
            op,
            format!(
                "axis {axis} is out of range for inserting an axis into shape {shape:?} \
                 (valid: {}..={n})",
                -n - 1
            ),
        ));
    }
    Ok(a as usize)
}

/// Checks that `perm` is a permutation of `0..shape.len()`.
fn check_permutation(op: &'static str, perm: &[usize], shape: &[usize]) -> Result<(), ShapeError> {
    let n = shape.len();
    let mut seen = vec![false; n];
    let ok = perm.len() == n
        && perm
            .iter()
            .all(|&p| p < n && !std::mem::replace(&mut seen[p], true));
    if ok {
        Ok(())
    } else {
        Err(ShapeError::new(
            op,
            format!("axes {perm:?} are not a permutation of the {n} axes of shape {shape:?}"),
        ))
    }
}

/// `v`'s elements in row-major order, copied a run along the last axis at a time.
fn row_major_elements<T: Clone>(v: &ArrayViewD<'_, T>) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len());
    if v.ndim() == 0 {
        out.extend(v.iter().cloned());
        return out;
    }
    for lane in v.rows() {
        match lane.as_slice() {
            Some(s) => extend_elems(&mut out, s),
            None => out.extend(lane.iter().cloned()),
        }
    }
    out
}

/// The shape argument of [`Tensor::reshape`]: a slice, array or `Vec` of `usize` lengths, or
/// of signed ones (`isize`, `i32`, `i64`) among which one may be `-1`, PyTorch's length to
/// infer: the one that keeps the number of elements. Untyped literals such as `&[2, -1]` are
/// `i32`s; an empty shape needs its type spelled, `&[0usize; 0]`.
pub trait NewShape {
    /// The lengths for a tensor of shape `from` with `len` elements (`-1` inferred), or an
    /// error naming `op` and both shapes.
    #[doc(hidden)]
    fn lengths(
        &self,
        op: &'static str,
        from: &[usize],
        len: usize,
    ) -> Result<Cow<'_, [usize]>, ShapeError>;
}

impl<X: NewShape + ?Sized> NewShape for &X {
    fn lengths(
        &self,
        op: &'static str,
        from: &[usize],
        len: usize,
    ) -> Result<Cow<'_, [usize]>, ShapeError> {
        (**self).lengths(op, from, len)
    }
}

macro_rules! unsigned_shape {
    ($($t:ty),*) => {$(
        impl NewShape for $t {
            fn lengths(&self, _: &'static str, _: &[usize], _: usize)
                -> Result<Cow<'_, [usize]>, ShapeError> {
                Ok(Cow::Borrowed(&self[..]))
            }
        }
    )*};
}
unsigned_shape!([usize], Vec<usize>);

impl<const N: usize> NewShape for [usize; N] {
    fn lengths(
        &self,
        _: &'static str,
        _: &[usize],
        _: usize,
    ) -> Result<Cow<'_, [usize]>, ShapeError> {
        Ok(Cow::Borrowed(&self[..]))
    }
}

macro_rules! signed_shape {
    ($($t:ty),*) => {$(
        impl NewShape for [$t] {
            fn lengths(&self, op: &'static str, from: &[usize], len: usize)
                -> Result<Cow<'_, [usize]>, ShapeError> {
                infer_length(op, self, |d| d as i64, from, len).map(Cow::Owned)
            }
        }
        impl<const N: usize> NewShape for [$t; N] {
            fn lengths(&self, op: &'static str, from: &[usize], len: usize)
                -> Result<Cow<'_, [usize]>, ShapeError> {
                self[..].lengths(op, from, len)
            }
        }
        impl NewShape for Vec<$t> {
            fn lengths(&self, op: &'static str, from: &[usize], len: usize)
                -> Result<Cow<'_, [usize]>, ShapeError> {
                self[..].lengths(op, from, len)
            }
        }
    )*};
}
signed_shape!(isize, i32, i64);

/// Signed lengths `dims` as the shape of `len` elements (those of shape `from`): at most one
/// `-1`, inferred, and no other negative length.
fn infer_length<D: Copy + std::fmt::Debug>(
    op: &'static str,
    dims: &[D],
    signed: fn(D) -> i64,
    from: &[usize],
    len: usize,
) -> Result<Vec<usize>, ShapeError> {
    let fail = |why: String| {
        Err(ShapeError::new(
            op,
            format!("cannot reshape shape {from:?} ({len} elements) into shape {dims:?}: {why}"),
        ))
    };
    // One pass: the lengths, and where the `-1` stands (no other allocation on this path,
    // which untyped literals such as `&[2, 3]` take too).
    let mut out = Vec::with_capacity(dims.len());
    let mut inferred = None;
    for (i, &d) in dims.iter().enumerate() {
        match signed(d) {
            -1 if inferred.is_some() => return fail("more than one -1".to_string()),
            -1 => inferred = Some(i),
            bad if bad < 0 => {
                return fail(format!(
                    "length {bad} is negative (only one -1, to infer, is allowed)"
                ))
            }
            _ => {}
        }
        out.push(signed(d).max(0) as usize);
    }
    if let Some(i) = inferred {
        let known = out
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .try_fold(1usize, |acc, (_, &d)| acc.checked_mul(d));
        match known {
            Some(k) if k != 0 && len.is_multiple_of(k) => out[i] = len / k,
            Some(0) => return fail("the -1 could be any length next to a length 0".to_string()),
            Some(k) => return fail(format!("{len} elements do not divide into rows of {k}")),
            None => return fail("the other lengths overflow".to_string()),
        }
    }
    Ok(out)
}

/// The permutation that undoes `perm`.
fn inverse_permutation(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    inv
}

impl<T: Clone> Tensor<T> {
    panicking_twin! {
        /// The same elements (in row-major order) with a new shape of the same size.
        ///
        /// Free for a row-major tensor, and for any other whose strides give the new shape as a
        /// view (an axis of a slice split, axes adjacent in memory merged); a tensor in another
        /// layout (after `permute`, `t` or `flip`) is copied into row-major order first.
        ///
        /// `shape` may be signed with one `-1` (`x.reshape(&[2, -1])`), the length that keeps
        /// the number of elements ([`NewShape`]).
        ///
        /// # Panics
        /// When `shape` holds a different number of elements, or its `-1` cannot be inferred (a
        /// second `-1`, another negative length, a size that does not divide); the message names
        /// both shapes.
        pub fn reshape<S: NewShape + ?Sized>(&self, shape: &S) -> Tensor<T> => self.try_reshape
    }

    /// Like [`Tensor::reshape`], returning an error when the sizes differ.
    pub fn try_reshape<S: NewShape + ?Sized>(&self, shape: &S) -> Result<Tensor<T>, ShapeError> {
        let shape = shape.lengths("reshape", self.shape(), self.len())?;
        let shape = &shape[..];
        let size = checked_size::<T>("reshape", shape, String::new).ok();
        if size != Some(self.len()) {
            return Err(ShapeError::new(
                "reshape",
                format!(
                    "cannot reshape shape {:?} ({} elements) into shape {:?} ({})",
                    self.shape(),
                    self.len(),
                    shape,
                    size.map_or_else(
                        || "too many elements".to_string(),
                        |s| format!("{s} elements")
                    )
                ),
            ));
        }
        if same_shape(self.shape(), shape) {
            return Ok(self.clone());
        }
        let keeps = self.ndim() > 0 && shape.first() == self.shape().first();
        if let Some(t) = self.per_example(keeps, |e| e.try_reshape(&shape[1..])) {
            return t;
        }
        if let Some(t) = small::relabel(self, shape) {
            return Ok(t);
        }
        let data = self.to_shared();
        let in_place = data.is_standard_layout()
            || data
                .view()
                .to_shape(IxDyn(shape))
                .is_ok_and(|r| r.is_view());
        if in_place {
            let reshaped = data
                .into_shape_clone(IxDyn(shape))
                .expect("reshape: the strides take the new shape");
            return Ok(Tensor::from_shared(reshaped));
        }
        Ok(Tensor::from_vec(row_major_elements(&data.view()), shape))
    }

    panicking_twin! {
        /// The axes reordered: axis `i` of the result is axis `perm[i]` of `self` (a view).
        ///
        /// # Panics
        /// When `perm` is not a permutation of `0..ndim`.
        pub fn permute(&self, perm: &[usize]) -> Tensor<T> => self.try_permute
    }

    /// Like [`Tensor::permute`], returning an error when `perm` is not a permutation.
    pub fn try_permute(&self, perm: &[usize]) -> Result<Tensor<T>, ShapeError> {
        check_permutation("permute", perm, self.shape())?;
        let per_example = |e: &Tensor<T>| {
            let rest: Vec<usize> = perm[1..].iter().map(|&a| a.saturating_sub(1)).collect();
            e.try_permute(&rest)
        };
        if let Some(t) = self.per_example(perm.first() == Some(&0), per_example) {
            return t;
        }
        Ok(Tensor::from_shared(
            self.to_shared().permuted_axes(IxDyn(perm)),
        ))
    }

    panicking_twin! {
        /// Axes `a` and `b` swapped (a view; negative axes count from the end), PyTorch's
        /// `x.transpose(a, b)`: a [`Tensor::permute`].
        ///
        /// # Panics
        /// When `a` or `b` is out of range.
        pub fn transpose(&self, a: isize, b: isize) -> Tensor<T> => self.try_transpose
    }

    /// Like [`Tensor::transpose`], returning an error for an axis out of range.
    pub fn try_transpose(&self, a: isize, b: isize) -> Result<Tensor<T>, ShapeError> {
        let n = self.ndim();
        let axis = |axis: isize| {
            normalize_axis("transpose", axis, n).map_err(|_| {
                ShapeError::new(
                    "transpose",
                    format!("axis {axis} is out of range for shape {:?}", self.shape()),
                )
            })
        };
        let (a, b) = (axis(a)?, axis(b)?);
        let inner = |x: usize| x as isize - 1;
        if let Some(t) = self.per_example(a > 0 && b > 0, |e| e.try_transpose(inner(a), inner(b))) {
            return t;
        }
        let mut data = self.to_shared();
        data.swap_axes(a, b);
        Ok(Tensor::from_shared(data))
    }

    panicking_twin! {
        /// The last two axes swapped (a view): the transpose of a matrix, of each matrix in a
        /// batch.
        ///
        /// # Panics
        /// When the tensor has fewer than two axes.
        pub fn t(&self) -> Tensor<T> => self.try_t
    }

    /// Like [`Tensor::t`], returning an error for a tensor with fewer than two axes.
    pub fn try_t(&self) -> Result<Tensor<T>, ShapeError> {
        let n = self.ndim();
        if n < 2 {
            return Err(ShapeError::new(
                "t",
                format!(
                    "shape {:?} has {n} axes; t swaps the last two and needs at least 2",
                    self.shape()
                ),
            ));
        }
        if let Some(t) = self.per_example(n > 2, Tensor::try_t) {
            return t;
        }
        let mut data = self.to_shared();
        data.swap_axes(n - 2, n - 1);
        Ok(Tensor::from_shared(data))
    }

    panicking_twin! {
        /// The tensor broadcast to `shape` under NumPy's rules (a new row-major tensor).
        ///
        /// # Panics
        /// When the tensor's shape does not broadcast to `shape`.
        pub fn broadcast_to(&self, shape: &[usize]) -> Tensor<T> => self.try_broadcast_to
    }

    /// Like [`Tensor::broadcast_to`], returning an error when the shapes do not broadcast.
    pub fn try_broadcast_to(&self, shape: &[usize]) -> Result<Tensor<T>, ShapeError> {
        if same_shape(self.shape(), shape) {
            return Ok(self.clone());
        }
        checked_size::<T>("broadcast_to", shape, || {
            format!("broadcasting shape {:?}", self.shape())
        })?;
        // Copies of the whole tensor along one new leading axis (a batched pass's copies of a
        // value it does not batch) share its elements until written to: ops that leave the
        // leading axis compute one example (`Tensor::per_example`).
        if let [n, rest @ ..] = shape {
            if !self.is_inline() && same_shape(rest, self.shape()) {
                return Ok(self.repeated(*n));
            }
        }
        Ok(Tensor::from_array(materialize(&broadcast_view(
            "broadcast_to",
            self,
            shape,
        )?)))
    }

    panicking_twin! {
        /// A new axis of length 1 inserted at `axis` (a view); `axis` ranges over
        /// `-ndim-1..=ndim`, negative counting from the end of the result's axes.
        ///
        /// # Panics
        /// When `axis` is out of that range.
        pub fn expand_dims(&self, axis: isize) -> Tensor<T> => self.try_expand_dims
    }

    /// Like [`Tensor::expand_dims`], returning an error when `axis` is out of range.
    pub fn try_expand_dims(&self, axis: isize) -> Result<Tensor<T>, ShapeError> {
        let a = insert_position("expand_dims", axis, self.shape())?;
        if let Some(t) = small::insert_axis(self, a) {
            return Ok(t);
        }
        Ok(Tensor::from_shared(self.to_shared().insert_axis(Axis(a))))
    }

    panicking_twin! {
        /// The length-1 axis `axis` removed (a view).
        ///
        /// # Panics
        /// When `axis` is out of range or its length is not 1.
        pub fn squeeze(&self, axis: isize) -> Tensor<T> => self.try_squeeze
    }

    /// Like [`Tensor::squeeze`], returning an error for a bad axis.
    pub fn try_squeeze(&self, axis: isize) -> Result<Tensor<T>, ShapeError> {
        let a = normalize_axis("squeeze", axis, self.ndim()).map_err(|_| {
            ShapeError::new(
                "squeeze",
                format!("axis {axis} is out of range for shape {:?}", self.shape()),
            )
        })?;
        if self.shape()[a] != 1 {
            return Err(ShapeError::new(
                "squeeze",
                format!(
                    "axis {axis} of shape {:?} has length {}, not 1",
                    self.shape(),
                    self.shape()[a]
                ),
            ));
        }
        if let Some(t) = self.per_example(a > 0, |e| e.try_squeeze(a as isize - 1)) {
            return t;
        }
        // A length-1 axis removed: the same elements in the same row-major order.
        if let Some(t) = small::remove_axis(self, a) {
            return Ok(t);
        }
        Ok(Tensor::from_shared(
            self.to_shared().index_axis_move(Axis(a), 0),
        ))
    }
}

// ---- rules ----------------------------------------------------------------------------------
//
// Every shape op is linear: its JVP is the op applied to the tangent, its VJP the adjoint.
//
// | op           | JVP                      | VJP                                 |
// |--------------|--------------------------|-------------------------------------|
// | reshape      | dx.reshape(shape)        | g.reshape(x_shape)                  |
// | permute      | dx.permute(perm)         | g.permute(inverse(perm))            |
// | transpose    | dx.transpose(a, b)       | g.transpose(a, b)                   |
// | t            | dx.t()                   | g.t()                               |
// | broadcast_to | dx.broadcast_to(shape)   | sum_to_shape(g, x_shape)            |
// | expand_dims  | dx.expand_dims(axis)     | g.squeeze(axis)                     |
// | squeeze      | dx.squeeze(axis)         | g.reshape(x_shape)                  |

/// Rules of the shape ops (see the module's table).
pub mod rules {
    use super::*;

    /// JVP of `x.reshape(shape)`.
    pub fn reshape_jvp<T: Element, S: NewShape + ?Sized>(shape: &S, dx: &Tensor<T>) -> Tensor<T> {
        dx.reshape(shape)
    }
    /// VJP of `x.reshape(shape)`: `g` back in `x`'s shape.
    pub fn reshape_vjp<T: Element>(g: &Tensor<T>, x_shape: &[usize]) -> Tensor<T> {
        g.reshape(x_shape)
    }

    /// JVP of `x.permute(perm)`.
    pub fn permute_jvp<T: Element>(perm: &[usize], dx: &Tensor<T>) -> Tensor<T> {
        dx.permute(perm)
    }
    /// VJP of `x.permute(perm)`: `g` permuted by the inverse permutation.
    pub fn permute_vjp<T: Element>(g: &Tensor<T>, perm: &[usize]) -> Tensor<T> {
        g.permute(&inverse_permutation(perm))
    }

    /// JVP of `x.transpose(a, b)`.
    pub fn transpose_jvp<T: Element>(a: isize, b: isize, dx: &Tensor<T>) -> Tensor<T> {
        dx.transpose(a, b)
    }
    /// VJP of `x.transpose(a, b)`: the same swap, its own inverse.
    pub fn transpose_vjp<T: Element>(g: &Tensor<T>, a: isize, b: isize) -> Tensor<T> {
        g.transpose(a, b)
    }

    /// JVP of `x.t()`.
    pub fn t_jvp<T: Element>(dx: &Tensor<T>) -> Tensor<T> {
        dx.t()
    }
    /// VJP of `x.t()`.
    pub fn t_vjp<T: Element>(g: &Tensor<T>) -> Tensor<T> {
        g.t()
    }

    /// JVP of `x.broadcast_to(shape)`.
    pub fn broadcast_to_jvp<T: Element>(shape: &[usize], dx: &Tensor<T>) -> Tensor<T> {
        dx.broadcast_to(shape)
    }
    /// VJP of `x.broadcast_to(shape)`: `g` summed back to `x`'s shape.
    pub fn broadcast_to_vjp<T: Element>(g: &Tensor<T>, x_shape: &[usize]) -> Tensor<T> {
        sum_to_shape(g, x_shape)
    }

    /// JVP of `x.expand_dims(axis)`.
    pub fn expand_dims_jvp<T: Element>(axis: isize, dx: &Tensor<T>) -> Tensor<T> {
        dx.expand_dims(axis)
    }
    /// VJP of `x.expand_dims(axis)`: the inserted axis removed from `g`.
    pub fn expand_dims_vjp<T: Element>(g: &Tensor<T>, axis: isize) -> Tensor<T> {
        g.squeeze(axis)
    }

    /// JVP of `x.squeeze(axis)`.
    pub fn squeeze_jvp<T: Element>(axis: isize, dx: &Tensor<T>) -> Tensor<T> {
        dx.squeeze(axis)
    }
    /// VJP of `x.squeeze(axis)`: `g` back in `x`'s shape.
    pub fn squeeze_vjp<T: Element>(g: &Tensor<T>, x_shape: &[usize]) -> Tensor<T> {
        g.reshape(x_shape)
    }
}
