//! Sorting along one axis: `sort`, whose derivative moves each tangent with its element, and
//! `argsort`, the permutation itself as a `Tensor<i64>` (an index, constant to AD).
//!
//! Both order ascending and stably: equal elements keep their order, as `jnp.argsort` and
//! `torch.sort(stable=True)` do, so `argsort` is deterministic at ties. NaN sorts last, as in
//! NumPy and JAX; `-0.0` and `0.0` are equal. For descending order, sort `-x` (or flip the
//! result).
//!
//! `sort` is a permutation that depends on `x` only through the order of its elements, so it
//! is piecewise linear: `y[k] = x[p[k]]` with `p` the permutation, `dy[k] = dx[p[k]]`, and the
//! cotangent goes back through the inverse permutation, `gx[p[k]] = g[k]`. At ties the
//! permutation is the stable one, which picks one of the one-sided derivatives.

use std::cmp::Ordering;

use ndarray::{ArrayD, ArrayViewD, Axis, Zip};

use crate::element::Element;
use crate::error::{panicking_twin, OrPanic, ShapeError};
use crate::ops::reduce::checked_axis;
use crate::tensor::Tensor;

/// Ascending order with NaN after every number.
fn ascending<T: Element>(a: T, b: T) -> Ordering {
    a.partial_cmp(&b)
        .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

/// The stable ascending permutation of each lane of `x` along `axis`: `p[.., k, ..]` is the
/// index of the lane's `k`-th smallest element.
fn permutation<T: Element>(x: ArrayViewD<'_, T>, axis: Axis) -> ArrayD<i64> {
    let mut perm = ArrayD::<i64>::zeros(x.raw_dim());
    let mut order: Vec<usize> = Vec::new();
    Zip::from(perm.lanes_mut(axis))
        .and(x.lanes(axis))
        .for_each(|mut p, lane| {
            order.clear();
            order.extend(0..lane.len());
            order.sort_by(|&i, &j| ascending(lane[i], lane[j]));
            for (p, &i) in p.iter_mut().zip(&order) {
                *p = i as i64;
            }
        });
    perm
}

/// `v` reordered along `axis` by `perm`: `out[.., k, ..] = v[.., perm[k], ..]`.
fn take_along<T: Element>(v: ArrayViewD<'_, T>, perm: &ArrayD<i64>, axis: Axis) -> ArrayD<T> {
    let mut out = ArrayD::zeros(v.raw_dim());
    Zip::from(out.lanes_mut(axis))
        .and(v.lanes(axis))
        .and(perm.lanes(axis))
        .for_each(|mut o, v, p| {
            for (o, &i) in o.iter_mut().zip(p) {
                *o = v[i as usize];
            }
        });
    out
}

/// The inverse of [`take_along`]: `out[.., perm[k], ..] = v[.., k, ..]`.
fn put_along<T: Element>(v: ArrayViewD<'_, T>, perm: &ArrayD<i64>, axis: Axis) -> ArrayD<T> {
    let mut out = ArrayD::zeros(v.raw_dim());
    Zip::from(out.lanes_mut(axis))
        .and(v.lanes(axis))
        .and(perm.lanes(axis))
        .for_each(|mut o, v, p| {
            for (&v, &i) in v.iter().zip(p) {
                o[i as usize] = v;
            }
        });
    out
}

impl<T: Element> Tensor<T> {
    panicking_twin! {
        /// The elements sorted ascending along `axis` (negative counts from the end; `-1` is JAX's
        /// default), stably, NaN last.
        ///
        /// ```
        /// use rune_runtime::Tensor;
        /// let x = Tensor::from_vec(vec![3.0, f64::NAN, -1.0, 2.0, 0.5, 7.0], &[2, 3]);
        /// let y = x.sort(-1);
        /// assert_eq!(y.to_vec()[..2], [-1.0, 3.0]);
        /// assert!(y.to_vec()[2].is_nan());
        /// assert_eq!(y.to_vec()[3..], [0.5, 2.0, 7.0]);
        /// assert_eq!(x.sort(0).to_vec()[..1], [2.0]);
        /// ```
        ///
        /// # Panics
        /// When `axis` is out of range; the message names the op and the shape.
        pub fn sort(&self, axis: isize) -> Tensor<T> => self.try_sort
    }

    /// Like [`Tensor::sort`], returning an error when `axis` is out of range.
    pub fn try_sort(&self, axis: isize) -> Result<Tensor<T>, ShapeError> {
        let ax = Axis(checked_axis("sort", axis, self.shape())?);
        let perm = permutation(self.view(), ax);
        Ok(Tensor::from_array(take_along(self.view(), &perm, ax)))
    }

    panicking_twin! {
        /// The indices that sort the tensor along `axis`: `x.gather(axis, &x.argsort(axis))` is
        /// `x.sort(axis)`. Stable (equal elements keep their order), NaN last. The result is an
        /// index, constant to AD.
        ///
        /// ```
        /// use rune_runtime::Tensor;
        /// let x = Tensor::from_vec(vec![3.0, 1.0, 2.0, 1.0], &[4]);
        /// assert_eq!(x.argsort(0).to_vec(), vec![1, 3, 2, 0]);
        /// ```
        ///
        /// # Panics
        /// When `axis` is out of range; the message names the op and the shape.
        pub fn argsort(&self, axis: isize) -> Tensor<i64> => self.try_argsort
    }

    /// Like [`Tensor::argsort`], returning an error when `axis` is out of range.
    pub fn try_argsort(&self, axis: isize) -> Result<Tensor<i64>, ShapeError> {
        let ax = Axis(checked_axis("argsort", axis, self.shape())?);
        Ok(Tensor::from_array(permutation(self.view(), ax)))
    }
}

/// Rules of `sort`: the tangent permuted as `x`'s elements are, the cotangent permuted back.
pub mod rules {
    use super::*;

    #[track_caller]
    fn axis_of(op: &'static str, axis: isize, shape: &[usize]) -> Axis {
        Axis(checked_axis(op, axis, shape).or_panic())
    }

    /// JVP of `x.sort(axis)`: `dx` in the order that sorts `x`.
    ///
    /// # Panics
    /// When `axis` is out of range or `dx` does not have `x`'s shape.
    #[track_caller]
    pub fn sort_jvp<T: Element>(x: &Tensor<T>, axis: isize, dx: &Tensor<T>) -> Tensor<T> {
        let ax = axis_of("sort_jvp", axis, x.shape());
        check_same_shape("sort_jvp", x, dx);
        let perm = permutation(x.view(), ax);
        Tensor::from_array(take_along(dx.view(), &perm, ax))
    }

    /// VJP of `x.sort(axis)`: each element of `g` sent back to the position in `x` of the
    /// element sorted there.
    ///
    /// # Panics
    /// When `axis` is out of range or `g` does not have `x`'s shape.
    #[track_caller]
    pub fn sort_vjp<T: Element>(g: &Tensor<T>, x: &Tensor<T>, axis: isize) -> Tensor<T> {
        let ax = axis_of("sort_vjp", axis, x.shape());
        check_same_shape("sort_vjp", x, g);
        let perm = permutation(x.view(), ax);
        Tensor::from_array(put_along(g.view(), &perm, ax))
    }

    #[track_caller]
    fn check_same_shape<T: Element>(op: &'static str, x: &Tensor<T>, t: &Tensor<T>) {
        if x.shape() != t.shape() {
            panic!(
                "{op}: a tensor of shape {:?} does not have the input's shape {:?}",
                t.shape(),
                x.shape()
            );
        }
    }
}
