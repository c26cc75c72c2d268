//! Reductions: `sum`, `mean`, `max`, `min`, `prod`, `logsumexp`, and the statistics `var` and
//! `std`, over every axis or over a list of axes.
//!
//! The `_axes` forms take the axes to reduce (negative counts from the end) and `keepdims`; as in
//! NumPy, an empty list reduces nothing, and a reduced axis is dropped unless `keepdims` keeps it
//! with length 1. Reducing over an empty axis gives the op's identity: `0` for `sum`, `1` for
//! `prod`, `-inf` for `max` and `logsumexp`, `+inf` for `min` (as JAX), and NaN for `mean`.
//! `max` and `min` propagate NaN.
//!
//! `var` and `std` take `ddof` as NumPy and JAX do (PyTorch's `correction`): the sum of squared
//! deviations is divided by `n - ddof`, so `0` gives the population variance and `1` the
//! unbiased sample variance. Where `n <= ddof` the divisor is `0` (as NumPy's `max(n - ddof, 0)`),
//! giving `inf`, or NaN for a group of equal values or an empty one. They are computed in two
//! passes around each group's first element (see `deviations`), so a large common offset cancels
//! before anything is summed: the variance of `1e8 + [1, 2, 3, 4]` is `1.25` exactly in `f64`,
//! where `mean(x²) - mean(x)²` gives `0` or worse.
//!
//! `logsumexp` and its rules are in `reduce/logsumexp.rs`, `var` and `std` and theirs in
//! `reduce/statistics.rs`; this file holds the axis checks, the kernels on views the others
//! share, and the rest.

use ndarray::{ArrayD, ArrayView, ArrayView1, ArrayViewD, Axis, Dimension, IxDyn, RemoveAxis, Zip};

use crate::broadcast::{materialize, same_shape};
use crate::element::{strong_mul, Element};
use crate::error::{panicking_twin, OrPanic, ShapeError};
use crate::ops::{normalize_axes, normalize_axis};
use crate::summation::{along_lanes, sum_all, sum_along};
use crate::tensor::Tensor;

mod chooser;
mod logsumexp;
mod statistics;

use logsumexp::logsumexp_tensor;

// ---- axis checks ----------------------------------------------------------------------------

/// `axes` normalised and sorted; the error names `op` and the tensor's shape.
pub(crate) fn checked_axes(
    op: &'static str,
    axes: &[isize],
    shape: &[usize],
) -> Result<Vec<usize>, ShapeError> {
    normalize_axes(op, axes, shape.len())
        .map_err(|e| ShapeError::new(op, format!("{} (shape {shape:?})", e.message())))
}

/// `axis` normalised; the error names `op` and the tensor's shape.
pub(crate) fn checked_axis(
    op: &'static str,
    axis: isize,
    shape: &[usize],
) -> Result<usize, ShapeError> {
    normalize_axis(op, axis, shape.len())
        .map_err(|e| ShapeError::new(op, format!("{} (shape {shape:?})", e.message())))
}

fn all_axes(ndim: usize) -> Vec<usize> {
    (0..ndim).collect()
}

/// The shape of a reduction of `shape` over the (sorted) `axes`.
pub(crate) fn reduced_shape(shape: &[usize], axes: &[usize], keepdims: bool) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .filter_map(|(i, &n)| match (axes.contains(&i), keepdims) {
            (false, _) => Some(n),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// A reduction's result (or cotangent) `r` with the reduced axes of `x_shape` put back with
/// length 1 (the keepdims shape), ready to broadcast against `x` (`Zip::and_broadcast`).
///
/// # Panics
/// When `r` does not have the shape of the reduction of `x_shape` over `axes`.
#[track_caller]
pub(crate) fn expand_back<'a, T>(
    op: &'static str,
    r: ArrayViewD<'a, T>,
    x_shape: &[usize],
    axes: &[usize],
    keepdims: bool,
) -> ArrayViewD<'a, T> {
    let expected = reduced_shape(x_shape, axes, keepdims);
    if !same_shape(r.shape(), &expected) {
        panic!(
            "{op}: a tensor of shape {:?} is not the reduction of shape {x_shape:?} over axes \
             {axes:?} (keepdims {keepdims}), which has shape {expected:?}",
            r.shape()
        );
    }
    let mut v = r;
    if !keepdims {
        for &a in axes {
            v = v.insert_axis(Axis(a));
        }
    }
    v
}

// ---- kernels on views -----------------------------------------------------------------------

/// Reduces `x` over the sorted `axes` (none: a copy): `whole` reduces everything to one value,
/// `along` one axis.
fn reduce_view<T: Element>(
    x: ArrayViewD<'_, T>,
    axes: &[usize],
    keepdims: bool,
    whole: impl Fn(ArrayViewD<'_, T>) -> T,
    along: impl Fn(ArrayViewD<'_, T>, Axis) -> ArrayD<T>,
) -> ArrayD<T> {
    if axes.is_empty() {
        return x.to_owned();
    }
    if axes.len() == x.ndim() {
        let shape = reduced_shape(x.shape(), axes, keepdims);
        return ArrayD::from_elem(IxDyn(&shape), whole(x));
    }
    let mut desc = axes.iter().rev();
    let first = *desc.next().expect("axes is not empty");
    let mut acc = along(x, Axis(first));
    for &a in desc {
        acc = along(acc.view(), Axis(a));
    }
    if keepdims {
        for &a in axes {
            acc = acc.insert_axis(Axis(a));
        }
    }
    acc
}

/// The larger of `acc` and `v`, NaN if either is NaN.
#[inline]
fn max_nan<T: Element>(acc: T, v: T) -> T {
    if v > acc || v.is_nan() {
        v
    } else {
        acc
    }
}

/// The smaller of `acc` and `v`, NaN if either is NaN.
#[inline]
fn min_nan<T: Element>(acc: T, v: T) -> T {
    if v < acc || v.is_nan() {
        v
    } else {
        acc
    }
}

/// The maximum of `v`'s elements (`-inf` if none), NaN if any is NaN.
///
/// A contiguous view of reals goes through `vmath::extreme`; another folds twice, the second
/// time for NaN.
pub(crate) fn max_of<T: Element, D: Dimension>(v: ArrayView<'_, T, D>) -> T {
    if let Some(m) = v
        .as_slice_memory_order()
        .and_then(|xs| T::lane_extreme(xs, true))
    {
        return m;
    }
    let m = v.fold(T::neg_infinity(), |m, &x| m.max(x));
    if v.fold(false, |nan, &x| nan | x.is_nan()) {
        T::nan()
    } else {
        m
    }
}

/// The minimum of `v`'s elements (`+inf` if none), NaN if any is NaN.
fn min_of<T: Element, D: Dimension>(v: ArrayView<'_, T, D>) -> T {
    if let Some(m) = v
        .as_slice_memory_order()
        .and_then(|xs| T::lane_extreme(xs, false))
    {
        return m;
    }
    let m = v.fold(T::infinity(), |m, &x| m.min(x));
    if v.fold(false, |nan, &x| nan | x.is_nan()) {
        T::nan()
    } else {
        m
    }
}

/// Reduces `v` along `axis`: `lane` folds one lane, `f` folds elementwise from `init` plane by
/// plane; whichever walks memory better.
fn fold_along<T: Element>(
    v: ArrayViewD<'_, T>,
    axis: Axis,
    lane: impl Fn(ArrayView1<'_, T>) -> T,
    init: T,
    f: impl Fn(T, T) -> T,
) -> ArrayD<T> {
    if along_lanes(&v, axis) {
        v.map_axis(axis, lane)
    } else {
        v.fold_axis(axis, init, |&a, &b| f(a, b))
    }
}

pub(crate) fn sum_view<T: Element>(
    x: ArrayViewD<'_, T>,
    axes: &[usize],
    keepdims: bool,
) -> ArrayD<T> {
    reduce_view(x, axes, keepdims, sum_all, sum_along)
}

fn max_view<T: Element>(x: ArrayViewD<'_, T>, axes: &[usize], keepdims: bool) -> ArrayD<T> {
    reduce_view(x, axes, keepdims, max_of, |v, a| {
        fold_along(v, a, max_of, T::neg_infinity(), max_nan)
    })
}

fn min_view<T: Element>(x: ArrayViewD<'_, T>, axes: &[usize], keepdims: bool) -> ArrayD<T> {
    reduce_view(x, axes, keepdims, min_of, |v, a| {
        fold_along(v, a, min_of, T::infinity(), min_nan)
    })
}

fn prod_view<T: Element>(x: ArrayViewD<'_, T>, axes: &[usize], keepdims: bool) -> ArrayD<T> {
    reduce_view(
        x,
        axes,
        keepdims,
        |v| v.product(),
        |v, a| fold_along(v, a, |l| l.product(), T::one(), |a, b| a * b),
    )
}

/// The number of elements a reduction over `axes` combines into each result.
pub(crate) fn count<T: Element>(shape: &[usize], axes: &[usize]) -> T {
    T::from_f64(axes.iter().map(|&a| shape[a]).product::<usize>() as f64)
}

/// `max` over `axes` (keepdims), with non-finite maxima replaced by zero: the shift that makes
/// `exp(x - shift)` safe.
pub(crate) fn stable_shift<T: Element>(x: ArrayViewD<'_, T>, axes: &[usize]) -> ArrayD<T> {
    max_view(x, axes, true).mapv_into(|m| if m.is_finite() { m } else { T::zero() })
}

/// The product of all the other elements of each element's reduction group, without division:
/// exact where `x` has zeros. Prefix times suffix products along the flattened reduced axes.
fn exclusive_prod<T: Element>(x: ArrayViewD<'_, T>, axes: &[usize]) -> ArrayD<T> {
    if let &[axis] = axes {
        if !along_lanes(&x, Axis(axis)) {
            return exclusive_prod_planes(x, Axis(axis));
        }
    }
    let ndim = x.ndim();
    let group: usize = axes.iter().map(|&a| x.shape()[a]).product();
    let perm: Vec<usize> = (0..ndim)
        .filter(|a| !axes.contains(a))
        .chain(axes.iter().copied())
        .collect();
    let xp = x.permuted_axes(IxDyn(&perm));
    let pshape = xp.shape().to_vec();
    let xs = xp.as_standard_layout();
    let flat = xs.as_slice().expect("standard layout is contiguous");
    let mut out = vec![T::zero(); flat.len()];
    if group > 0 {
        for (o, row) in out.chunks_exact_mut(group).zip(flat.chunks_exact(group)) {
            let mut prefix = T::one();
            for (o, &v) in o.iter_mut().zip(row) {
                *o = prefix;
                prefix *= v;
            }
            let mut suffix = T::one();
            for (o, &v) in o.iter_mut().zip(row).rev() {
                *o *= suffix;
                suffix *= v;
            }
        }
    }
    let out = ArrayD::from_shape_vec(IxDyn(&pshape), out).expect("one product per element");
    let mut inverse = vec![0; ndim];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p] = i;
    }
    let out = out.permuted_axes(IxDyn(&inverse));
    if out.is_standard_layout() {
        out
    } else {
        out.as_standard_layout().into_owned()
    }
}

/// [`exclusive_prod`] over one axis, one plane at a time.
fn exclusive_prod_planes<T: Element>(x: ArrayViewD<'_, T>, axis: Axis) -> ArrayD<T> {
    let n = x.len_of(axis);
    let mut out = ArrayD::zeros(x.raw_dim());
    let mut acc = ArrayD::ones(x.raw_dim().remove_axis(axis));
    for i in 0..n {
        out.index_axis_mut(axis, i).assign(&acc);
        Zip::from(&mut acc)
            .and(x.index_axis(axis, i))
            .for_each(|a, &v| *a *= v);
    }
    acc.fill(T::one());
    for i in (0..n).rev() {
        Zip::from(out.index_axis_mut(axis, i))
            .and(&mut acc)
            .and(x.index_axis(axis, i))
            .for_each(|o, a, &v| {
                *o *= *a;
                *a *= v;
            });
    }
    out
}

/// Applies a reduction kernel to a tensor; an empty axis list returns the tensor itself.
fn reduce_tensor<T: Element>(
    x: &Tensor<T>,
    axes: &[usize],
    keepdims: bool,
    kernel: impl Fn(ArrayViewD<'_, T>, &[usize], bool) -> ArrayD<T>,
) -> Tensor<T> {
    if axes.is_empty() {
        x.clone()
    } else {
        Tensor::from_array(kernel(x.view(), axes, keepdims))
    }
}

fn mean_tensor<T: Element>(x: &Tensor<T>, axes: &[usize], keepdims: bool) -> Tensor<T> {
    let n = count::<T>(x.shape(), axes);
    reduce_tensor(x, axes, keepdims, |v, a, k| {
        sum_view(v, a, k).mapv_into(|s| s / n)
    })
}

// ---- forward ops ----------------------------------------------------------------------------

macro_rules! axes_ops {
    ($($(#[$doc:meta])* $name:ident, $try_name:ident, $kernel:expr;)*) => {$(
        panicking_twin! {
            $(#[$doc])*
            ///
            /// # Panics
            /// When an axis is out of range or repeated; the message names the op and the shape.
            pub fn $name(&self, axes: &[isize], keepdims: bool) -> Tensor<T> => self.$try_name
        }

        #[doc = concat!("Like [`Tensor::", stringify!($name), "`], returning an error when an ",
                        "axis is out of range or repeated.")]
        pub fn $try_name(&self, axes: &[isize], keepdims: bool) -> Result<Tensor<T>, ShapeError> {
            let axes = checked_axes(stringify!($name), axes, self.shape())?;
            let kernel: fn(&Tensor<T>, &[usize], bool) -> Tensor<T> = $kernel;
            // Copies of one example (`vmap`) reduced past the leading axis: the example's.
            let keeps = !axes.is_empty() && !axes.contains(&0);
            let per_example = |e: &Tensor<T>| {
                let inner: Vec<usize> = axes.iter().map(|&a| a - 1).collect();
                Ok(kernel(e, &inner, keepdims))
            };
            if let Some(t) = self.per_example(keeps, per_example) {
                return t;
            }
            Ok(kernel(self, &axes, keepdims))
        }
    )*};
}

impl<T: Element> Tensor<T> {
    axes_ops! {
        /// The sum over `axes` (`[]` reduces nothing).
        sum_axes, try_sum_axes, |x, a, k| reduce_tensor(x, a, k, sum_view);
        /// The mean over `axes` (`[]` reduces nothing).
        mean_axes, try_mean_axes, mean_tensor;
        /// The maximum over `axes` (`[]` reduces nothing); NaN if any element is NaN.
        max_axes, try_max_axes, |x, a, k| reduce_tensor(x, a, k, max_view);
        /// The minimum over `axes` (`[]` reduces nothing); NaN if any element is NaN.
        min_axes, try_min_axes, |x, a, k| reduce_tensor(x, a, k, min_view);
        /// The product over `axes` (`[]` reduces nothing).
        prod_axes, try_prod_axes, |x, a, k| reduce_tensor(x, a, k, prod_view);
        /// `ln(sum(exp(x)))` over `axes` (`[]` reduces nothing), computed stably by shifting by
        /// the maximum.
        logsumexp_axes, try_logsumexp_axes, logsumexp_tensor;
    }

    /// The sum of all elements, as a 0-d tensor.
    #[must_use]
    pub fn sum(&self) -> Tensor<T> {
        Tensor::scalar(sum_all(self.view()))
    }

    /// The mean of all elements, as a 0-d tensor (NaN for an empty tensor).
    #[must_use]
    pub fn mean(&self) -> Tensor<T> {
        Tensor::scalar(sum_all(self.view()) / T::from_f64(self.len() as f64))
    }

    /// The maximum of all elements, as a 0-d tensor (`-inf` for an empty tensor; NaN if any
    /// element is NaN).
    #[must_use]
    pub fn max(&self) -> Tensor<T> {
        Tensor::scalar(max_of(self.view()))
    }

    /// The minimum of all elements, as a 0-d tensor (`+inf` for an empty tensor; NaN if any
    /// element is NaN).
    #[must_use]
    pub fn min(&self) -> Tensor<T> {
        Tensor::scalar(min_of(self.view()))
    }

    /// The product of all elements, as a 0-d tensor.
    #[must_use]
    pub fn prod(&self) -> Tensor<T> {
        Tensor::scalar(self.view().product())
    }
}

// ---- rules ----------------------------------------------------------------------------------
//
// With `b(.)` broadcasting a reduction's result back over the reduced axes:
//
// | op        | JVP                               | VJP                          | reads   |
// |-----------|-----------------------------------|------------------------------|---------|
// | sum       | sum(dx)                           | b(g)                         | x shape |
// | mean      | sum(dx) / n                       | b(g / n)                     | x shape |
// | max, min  | sum(dx * w)                       | b(g) * w                     | x, y    |
// | prod      | sum(dx * others)                  | b(g) * others                | x       |
// | logsumexp | sum(dx * p)                       | b(g) * p                     | x       |
// | var       | sum(dx * d) * 2 / c               | b(g) * d * 2 / c             | x       |
// | std       | sum(dx * d) / (c y)               | b(g / (c y)) * d             | x, y    |
//
// `d` is `x - mean` over the reduced axes (recomputed from `x`: see `deviations`), `c` is
// `n - ddof`. `std` is not differentiable where `y = 0` (every element of the group equal):
// there its rules give `0`, the smallest subgradient of this convex function (the norm of `d`,
// scaled), as PyTorch's do; `d / (c y)` would be `0/0`, and JAX's gradient is NaN there.
// `p` is the softmax of `x` over the reduced axes, `exp(x - max) / sum(exp(x - max))`, computed
// from `x` rather than as `exp(x - y)`: `y` (the rules still take it, and check its shape) is
// rounded to its own magnitude, which at `|x| ~ 1e7` in f32 is off by a factor `exp(0.5)`.
// `w` is `1/k` on each of the `k` elements equal to the extremum and `0` elsewhere: ties split
// the derivative evenly, as in JAX. `others` is the product of the other elements of each
// element's group, computed from prefix and suffix products without dividing by `x`, so the
// rules are exact at zeros (one zero: only that element has a nonzero gradient; two: none).

/// Rules of the reductions (see the module's table).
pub mod rules {
    use super::*;

    pub use super::statistics::rules::*;

    pub use super::logsumexp::rules::*;

    use super::chooser::{chooser_jvp, chooser_vjp};

    #[track_caller]
    pub(super) fn axes_of(op: &'static str, axes: &[isize], shape: &[usize]) -> Vec<usize> {
        checked_axes(op, axes, shape).or_panic()
    }

    #[track_caller]
    pub(super) fn broadcast_back<T: Element>(
        op: &'static str,
        g: &Tensor<T>,
        x_shape: &[usize],
        axes: &[usize],
        keepdims: bool,
    ) -> Tensor<T> {
        let view = expand_back(op, g.view(), x_shape, axes, keepdims);
        if axes.is_empty() {
            g.clone()
        } else {
            let full = view
                .broadcast(IxDyn(x_shape))
                .expect("a keepdims-shaped reduction broadcasts to its input's shape");
            Tensor::from_array(materialize(&full))
        }
    }

    #[track_caller]
    pub(super) fn mean_vjp_impl<T: Element>(
        op: &'static str,
        g: &Tensor<T>,
        x_shape: &[usize],
        axes: &[usize],
        keepdims: bool,
    ) -> Tensor<T> {
        let n = count::<T>(x_shape, axes);
        broadcast_back(op, &g.map(|&v| v / n), x_shape, axes, keepdims)
    }

    pub(super) fn prod_jvp_impl<T: Element>(
        x: &Tensor<T>,
        axes: &[usize],
        keepdims: bool,
        dx: &Tensor<T>,
    ) -> Tensor<T> {
        let mut others = exclusive_prod(x.view(), axes);
        Zip::from(&mut others)
            .and(dx.view())
            .for_each(|o, &d| *o = strong_mul(d, *o));
        Tensor::from_array(sum_view(others.view(), axes, keepdims))
    }

    #[track_caller]
    pub(super) fn prod_vjp_impl<T: Element>(
        op: &'static str,
        g: &Tensor<T>,
        x: &Tensor<T>,
        axes: &[usize],
        keepdims: bool,
    ) -> Tensor<T> {
        let gb = expand_back(op, g.view(), x.shape(), axes, keepdims);
        let mut others = exclusive_prod(x.view(), axes);
        Zip::from(&mut others)
            .and_broadcast(&gb)
            .for_each(|o, &g| *o = strong_mul(g, *o));
        Tensor::from_array(others)
    }

    /// JVP of `x.sum()`.
    pub fn sum_jvp<T: Element>(dx: &Tensor<T>) -> Tensor<T> {
        dx.sum()
    }
    /// VJP of `x.sum()`: `g` (0-d) broadcast to `x_shape`.
    #[track_caller]
    pub fn sum_vjp<T: Element>(g: &Tensor<T>, x_shape: &[usize]) -> Tensor<T> {
        if g.ndim() == 0 {
            // The one value repeated: no view to expand and broadcast.
            return Tensor::full(x_shape, g.item());
        }
        broadcast_back("sum_vjp", g, x_shape, &all_axes(x_shape.len()), false)
    }

    /// JVP of `x.sum_axes(axes, keepdims)`.
    #[track_caller]
    pub fn sum_axes_jvp<T: Element>(axes: &[isize], keepdims: bool, dx: &Tensor<T>) -> Tensor<T> {
        let axes = axes_of("sum_axes_jvp", axes, dx.shape());
        reduce_tensor(dx, &axes, keepdims, sum_view)
    }
    /// VJP of `x.sum_axes(axes, keepdims)`: `g` broadcast back to `x_shape`.
    #[track_caller]
    pub fn sum_axes_vjp<T: Element>(
        g: &Tensor<T>,
        x_shape: &[usize],
        axes: &[isize],
        keepdims: bool,
    ) -> Tensor<T> {
        let axes = axes_of("sum_axes_vjp", axes, x_shape);
        broadcast_back("sum_axes_vjp", g, x_shape, &axes, keepdims)
    }

    /// JVP of `x.mean()`.
    pub fn mean_jvp<T: Element>(dx: &Tensor<T>) -> Tensor<T> {
        dx.mean()
    }
    /// VJP of `x.mean()`: `g / n` broadcast to `x_shape`.
    #[track_caller]
    pub fn mean_vjp<T: Element>(g: &Tensor<T>, x_shape: &[usize]) -> Tensor<T> {
        if g.ndim() == 0 {
            let n = T::from_f64(x_shape.iter().product::<usize>() as f64);
            return Tensor::full(x_shape, g.item() / n);
        }
        mean_vjp_impl("mean_vjp", g, x_shape, &all_axes(x_shape.len()), false)
    }

    /// JVP of `x.mean_axes(axes, keepdims)`.
    #[track_caller]
    pub fn mean_axes_jvp<T: Element>(axes: &[isize], keepdims: bool, dx: &Tensor<T>) -> Tensor<T> {
        let axes = axes_of("mean_axes_jvp", axes, dx.shape());
        mean_tensor(dx, &axes, keepdims)
    }
    /// VJP of `x.mean_axes(axes, keepdims)`: `g / n` broadcast back to `x_shape`.
    #[track_caller]
    pub fn mean_axes_vjp<T: Element>(
        g: &Tensor<T>,
        x_shape: &[usize],
        axes: &[isize],
        keepdims: bool,
    ) -> Tensor<T> {
        let axes = axes_of("mean_axes_vjp", axes, x_shape);
        mean_vjp_impl("mean_axes_vjp", g, x_shape, &axes, keepdims)
    }

    /// JVP of `y = x.max()`: the mean of `dx` over the elements equal to `y`.
    #[track_caller]
    pub fn max_jvp<T: Element>(x: &Tensor<T>, y: &Tensor<T>, dx: &Tensor<T>) -> Tensor<T> {
        chooser_jvp("max_jvp", x, y, &all_axes(x.ndim()), false, dx)
    }
    /// VJP of `y = x.max()`: `g` split evenly among the elements equal to `y`.
    #[track_caller]
    pub fn max_vjp<T: Element>(g: &Tensor<T>, x: &Tensor<T>, y: &Tensor<T>) -> Tensor<T> {
        chooser_vjp("max_vjp", g, x, y, &all_axes(x.ndim()), false)
    }

    /// JVP of `y = x.max_axes(axes, keepdims)`: per group, the mean of `dx` over the maxima.
    #[track_caller]
    pub fn max_axes_jvp<T: Element>(
        x: &Tensor<T>,
        y: &Tensor<T>,
        axes: &[isize],
        keepdims: bool,
        dx: &Tensor<T>,
    ) -> Tensor<T> {
        let axes = axes_of("max_axes_jvp", axes, x.shape());
        chooser_jvp("max_axes_jvp", x, y, &axes, keepdims, dx)
    }
    /// VJP of `y = x.max_axes(axes, keepdims)`: `g` split evenly among each group's maxima.
    #[track_caller]
    pub fn max_axes_vjp<T: Element>(
        g: &Tensor<T>,
        x: &Tensor<T>,
        y: &Tensor<T>,
        axes: &[isize],
        keepdims: bool,
    ) -> Tensor<T> {
        let axes = axes_of("max_axes_vjp", axes, x.shape());
        chooser_vjp("max_axes_vjp", g, x, y, &axes, keepdims)
    }

    /// JVP of `y = x.min()`: the mean of `dx` over the elements equal to `y`.
    #[track_caller]
    pub fn min_jvp<T: Element>(x: &Tensor<T>, y: &Tensor<T>, dx: &Tensor<T>) -> Tensor<T> {
        chooser_jvp("min_jvp", x, y, &all_axes(x.ndim()), false, dx)
    }
    /// VJP of `y = x.min()`: `g` split evenly among the elements equal to `y`.
    #[track_caller]
    pub fn min_vjp<T: Element>(g: &Tensor<T>, x: &Tensor<T>, y: &Tensor<T>) -> Tensor<T> {
        chooser_vjp("min_vjp", g, x, y, &all_axes(x.ndim()), false)
    }

    /// JVP of `y = x.min_axes(axes, keepdims)`: per group, the mean of `dx` over the minima.
    #[track_caller]
    pub fn min_axes_jvp<T: Element>(
        x: &Tensor<T>,
        y: &Tensor<T>,
        axes: &[isize],
        keepdims: bool,
        dx: &Tensor<T>,
    ) -> Tensor<T> {
        let axes = axes_of("min_axes_jvp", axes, x.shape());
        chooser_jvp("min_axes_jvp", x, y, &axes, keepdims, dx)
    }
    /// VJP of `y = x.min_axes(axes, keepdims)`: `g` split evenly among each group's minima.
    #[track_caller]
    pub fn min_axes_vjp<T: Element>(
        g: &Tensor<T>,
        x: &Tensor<T>,
        y: &Tensor<T>,
        axes: &[isize],
        keepdims: bool,
    ) -> Tensor<T> {
        let axes = axes_of("min_axes_vjp", axes, x.shape());
        chooser_vjp("min_axes_vjp", g, x, y, &axes, keepdims)
    }

    /// JVP of `x.prod()`: `sum_i dx_i * prod_{j != i} x_j`, exact at zeros.
    pub fn prod_jvp<T: Element>(x: &Tensor<T>, dx: &Tensor<T>) -> Tensor<T> {
        prod_jvp_impl(x, &all_axes(x.ndim()), false, dx)
    }
    /// VJP of `x.prod()`: `g * prod_{j != i} x_j` for each element `i`, exact at zeros.
    #[track_caller]
    pub fn prod_vjp<T: Element>(g: &Tensor<T>, x: &Tensor<T>) -> Tensor<T> {
        prod_vjp_impl("prod_vjp", g, x, &all_axes(x.ndim()), false)
    }

    /// JVP of `x.prod_axes(axes, keepdims)`, exact at zeros.
    #[track_caller]
    pub fn prod_axes_jvp<T: Element>(
        x: &Tensor<T>,
        axes: &[isize],
        keepdims: bool,
        dx: &Tensor<T>,
    ) -> Tensor<T> {
        let axes = axes_of("prod_axes_jvp", axes, x.shape());
        prod_jvp_impl(x, &axes, keepdims, dx)
    }
    /// VJP of `x.prod_axes(axes, keepdims)`: `g` times the product of the other elements of
    /// each element's group, exact at zeros.
    #[track_caller]
    pub fn prod_axes_vjp<T: Element>(
        g: &Tensor<T>,
        x: &Tensor<T>,
        axes: &[isize],
        keepdims: bool,
    ) -> Tensor<T> {
        let axes = axes_of("prod_axes_vjp", axes, x.shape());
        prod_vjp_impl("prod_axes_vjp", g, x, &axes, keepdims)
    }
}
