//! The variance and the standard deviation over all axes or some, and their rules.

use ndarray::Slice;

use super::*;

/// Each element's deviation from its group's mean over `axes` (in `x`'s shape), and the number
/// of elements in a group.
///
/// The mean is taken of `x - k`, with `k` the group's first element: a large common offset
/// (`1e8 + small`) cancels in that subtraction, exactly when the values are within a factor two
/// of each other, before any sum rounds it; and a group of equal values has deviations of
/// exactly zero, so its variance is exactly `0`.
fn deviations<T: Element>(x: ArrayViewD<'_, T>, axes: &[usize]) -> (ArrayD<T>, usize) {
    let n: usize = axes.iter().map(|&a| x.shape()[a]).product();
    if n == 0 {
        return (ArrayD::zeros(x.raw_dim()), 0);
    }
    let first = x.slice_each_axis(|d| {
        if axes.contains(&d.axis.index()) {
            Slice::from(0..1)
        } else {
            Slice::from(..)
        }
    });
    let mut d = Zip::from(&x)
        .and_broadcast(&first)
        .map_collect(|&v, &k| v - k);
    let count = T::from_f64(n as f64);
    let mean = sum_view(d.view(), axes, true).mapv_into(|s| s / count);
    Zip::from(&mut d)
        .and_broadcast(&mean)
        .for_each(|d, &m| *d -= m);
    (d, n)
}

/// `n - ddof`, or `0` where `ddof >= n`: what `var` divides the sum of squares by.
fn var_divisor<T: Element>(n: usize, ddof: usize) -> T {
    T::from_f64(n.saturating_sub(ddof) as f64)
}

fn var_view<T: Element>(
    x: ArrayViewD<'_, T>,
    axes: &[usize],
    keepdims: bool,
    ddof: usize,
) -> ArrayD<T> {
    let (mut d, n) = deviations(x, axes);
    d.mapv_inplace(|v| v * v);
    let c = var_divisor::<T>(n, ddof);
    sum_view(d.view(), axes, keepdims).mapv_into(|s| s / c)
}

fn std_view<T: Element>(
    x: ArrayViewD<'_, T>,
    axes: &[usize],
    keepdims: bool,
    ddof: usize,
) -> ArrayD<T> {
    var_view(x, axes, keepdims, ddof).mapv_into(|v| v.sqrt())
}

impl<T: Element> Tensor<T> {
    panicking_twin! {
        /// The variance over `axes` (`[]` reduces nothing): `sum((x - mean)²) / (n - ddof)` for
        /// each group of `n` elements (see the module docs for `ddof` and the two-pass algorithm).
        ///
        /// ```
        /// use rune_runtime::Tensor;
        /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 9.0], &[2, 3]);
        /// assert_eq!(x.var_axes(&[1], false, 0).to_vec(), vec![2.0 / 3.0, 14.0 / 3.0]);
        /// assert_eq!(x.var_axes(&[-1], true, 1).shape(), &[2, 1]);
        /// ```
        ///
        /// # Panics
        /// When an axis is out of range or repeated; the message names the op and the shape.
        pub fn var_axes(&self, axes: &[isize], keepdims: bool, ddof: usize) -> Tensor<T>
            => self.try_var_axes
    }

    /// Like [`Tensor::var_axes`], returning an error when an axis is out of range or repeated.
    pub fn try_var_axes(
        &self,
        axes: &[isize],
        keepdims: bool,
        ddof: usize,
    ) -> Result<Tensor<T>, ShapeError> {
        let axes = checked_axes("var_axes", axes, self.shape())?;
        Ok(Tensor::from_array(var_view(
            self.view(),
            &axes,
            keepdims,
            ddof,
        )))
    }

    panicking_twin! {
        /// The standard deviation over `axes` (`[]` reduces nothing): the square root of
        /// [`Tensor::var_axes`]. Its derivative where it is `0` (a group of equal values) is taken
        /// to be `0`, as PyTorch's; JAX's is NaN.
        ///
        /// # Panics
        /// When an axis is out of range or repeated; the message names the op and the shape.
        pub fn std_axes(&self, axes: &[isize], keepdims: bool, ddof: usize) -> Tensor<T>
            => self.try_std_axes
    }

    /// Like [`Tensor::std_axes`], returning an error when an axis is out of range or repeated.
    pub fn try_std_axes(
        &self,
        axes: &[isize],
        keepdims: bool,
        ddof: usize,
    ) -> Result<Tensor<T>, ShapeError> {
        let axes = checked_axes("std_axes", axes, self.shape())?;
        Ok(Tensor::from_array(std_view(
            self.view(),
            &axes,
            keepdims,
            ddof,
        )))
    }

    /// The variance of all elements, as a 0-d tensor: `sum((x - mean)²) / (n - ddof)` (`ddof`
    /// `0` for the population variance, `1` for the unbiased sample variance; see the module
    /// docs).
    ///
    /// ```
    /// use rune_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![1e8 + 1.0, 1e8 + 2.0, 1e8 + 3.0, 1e8 + 4.0], &[4]);
    /// assert_eq!(x.var(0).item(), 1.25);
    /// assert_eq!(x.var(1).item(), 5.0 / 3.0);
    /// ```
    #[must_use]
    pub fn var(&self, ddof: usize) -> Tensor<T> {
        let axes = all_axes(self.ndim());
        Tensor::from_array(var_view(self.view(), &axes, false, ddof))
    }

    /// The standard deviation of all elements, as a 0-d tensor: the square root of
    /// [`Tensor::var`]. Its derivative where it is `0` is taken to be `0` (see
    /// [`Tensor::std_axes`]).
    #[must_use]
    pub fn std(&self, ddof: usize) -> Tensor<T> {
        let axes = all_axes(self.ndim());
        Tensor::from_array(std_view(self.view(), &axes, false, ddof))
    }
}

/// Rules of these ops (see the table in `ops::reduce`).
pub mod rules {
    use super::super::rules::*;
    use super::*;

    #[track_caller]
    fn var_jvp_impl<T: Element>(
        x: &Tensor<T>,
        axes: &[usize],
        keepdims: bool,
        ddof: usize,
        dx: &Tensor<T>,
    ) -> Tensor<T> {
        let (mut d, n) = deviations(x.view(), axes);
        let c = T::from_f64(2.0) / var_divisor::<T>(n, ddof);
        Zip::from(&mut d)
            .and(dx.view())
            .for_each(|d, &t| *d = strong_mul(t, *d));
        Tensor::from_array(sum_view(d.view(), axes, keepdims).mapv_into(|s| strong_mul(s, c)))
    }

    #[track_caller]
    fn var_vjp_impl<T: Element>(
        op: &'static str,
        g: &Tensor<T>,
        x: &Tensor<T>,
        axes: &[usize],
        keepdims: bool,
        ddof: usize,
    ) -> Tensor<T> {
        let gb = expand_back(op, g.view(), x.shape(), axes, keepdims);
        let (mut d, n) = deviations(x.view(), axes);
        let c = T::from_f64(2.0) / var_divisor::<T>(n, ddof);
        Zip::from(&mut d)
            .and_broadcast(&gb)
            .for_each(|d, &g| *d = strong_mul(g, *d * c));
        Tensor::from_array(d)
    }

    /// `1 / ((n - ddof) y)`, the factor `std`'s rules apply to `d`; `0` where `y = 0` (see the
    /// module's table).
    fn std_scale<T: Element>(y: T, divisor: T) -> T {
        if y == T::zero() {
            T::zero()
        } else {
            (divisor * y).recip()
        }
    }

    #[track_caller]
    fn std_jvp_impl<T: Element>(
        op: &'static str,
        x: &Tensor<T>,
        y: &Tensor<T>,
        axes: &[usize],
        keepdims: bool,
        ddof: usize,
        dx: &Tensor<T>,
    ) -> Tensor<T> {
        expand_back(op, y.view(), x.shape(), axes, keepdims);
        let (mut d, n) = deviations(x.view(), axes);
        let c = var_divisor::<T>(n, ddof);
        Zip::from(&mut d)
            .and(dx.view())
            .for_each(|d, &t| *d = strong_mul(t, *d));
        let mut s = sum_view(d.view(), axes, keepdims);
        Zip::from(&mut s)
            .and(y.view())
            .for_each(|s, &y| *s = strong_mul(*s, std_scale(y, c)));
        Tensor::from_array(s)
    }

    #[track_caller]
    fn std_vjp_impl<T: Element>(
        op: &'static str,
        g: &Tensor<T>,
        x: &Tensor<T>,
        y: &Tensor<T>,
        axes: &[usize],
        keepdims: bool,
        ddof: usize,
    ) -> Tensor<T> {
        let yk = expand_back(op, y.view(), x.shape(), axes, keepdims);
        let gk = expand_back(op, g.view(), x.shape(), axes, keepdims);
        let (mut d, n) = deviations(x.view(), axes);
        let c = var_divisor::<T>(n, ddof);
        let share = Zip::from(&gk)
            .and(&yk)
            .map_collect(|&g, &y| strong_mul(g, std_scale(y, c)));
        Zip::from(&mut d)
            .and_broadcast(&share)
            .for_each(|d, &s| *d = strong_mul(s, *d));
        Tensor::from_array(d)
    }

    /// JVP of `x.var(ddof)`: `2 sum(dx * (x - mean)) / (n - ddof)`.
    #[track_caller]
    pub fn var_jvp<T: Element>(x: &Tensor<T>, ddof: usize, dx: &Tensor<T>) -> Tensor<T> {
        var_jvp_impl(x, &all_axes(x.ndim()), false, ddof, dx)
    }
    /// VJP of `x.var(ddof)`: `2 g (x - mean) / (n - ddof)`.
    #[track_caller]
    pub fn var_vjp<T: Element>(g: &Tensor<T>, x: &Tensor<T>, ddof: usize) -> Tensor<T> {
        var_vjp_impl("var_vjp", g, x, &all_axes(x.ndim()), false, ddof)
    }

    /// JVP of `x.var_axes(axes, keepdims, ddof)`: per group, `2 sum(dx * (x - mean)) / (n - ddof)`.
    #[track_caller]
    pub fn var_axes_jvp<T: Element>(
        x: &Tensor<T>,
        axes: &[isize],
        keepdims: bool,
        ddof: usize,
        dx: &Tensor<T>,
    ) -> Tensor<T> {
        let axes = axes_of("var_axes_jvp", axes, x.shape());
        var_jvp_impl(x, &axes, keepdims, ddof, dx)
    }
    /// VJP of `x.var_axes(axes, keepdims, ddof)`: `2 g (x - mean) / (n - ddof)`, `g` broadcast
    /// back over the group.
    #[track_caller]
    pub fn var_axes_vjp<T: Element>(
        g: &Tensor<T>,
        x: &Tensor<T>,
        axes: &[isize],
        keepdims: bool,
        ddof: usize,
    ) -> Tensor<T> {
        let axes = axes_of("var_axes_vjp", axes, x.shape());
        var_vjp_impl("var_axes_vjp", g, x, &axes, keepdims, ddof)
    }

    /// JVP of `y = x.std(ddof)`: `sum(dx * (x - mean)) / ((n - ddof) y)`, `0` where `y = 0`.
    #[track_caller]
    pub fn std_jvp<T: Element>(
        x: &Tensor<T>,
        y: &Tensor<T>,
        ddof: usize,
        dx: &Tensor<T>,
    ) -> Tensor<T> {
        std_jvp_impl("std_jvp", x, y, &all_axes(x.ndim()), false, ddof, dx)
    }
    /// VJP of `y = x.std(ddof)`: `g (x - mean) / ((n - ddof) y)`, `0` where `y = 0`.
    #[track_caller]
    pub fn std_vjp<T: Element>(
        g: &Tensor<T>,
        x: &Tensor<T>,
        y: &Tensor<T>,
        ddof: usize,
    ) -> Tensor<T> {
        std_vjp_impl("std_vjp", g, x, y, &all_axes(x.ndim()), false, ddof)
    }

    /// JVP of `y = x.std_axes(axes, keepdims, ddof)`: per group,
    /// `sum(dx * (x - mean)) / ((n - ddof) y)`, `0` where `y = 0`.
    #[track_caller]
    pub fn std_axes_jvp<T: Element>(
        x: &Tensor<T>,
        y: &Tensor<T>,
        axes: &[isize],
        keepdims: bool,
        ddof: usize,
        dx: &Tensor<T>,
    ) -> Tensor<T> {
        let axes = axes_of("std_axes_jvp", axes, x.shape());
        std_jvp_impl("std_axes_jvp", x, y, &axes, keepdims, ddof, dx)
    }
    /// VJP of `y = x.std_axes(axes, keepdims, ddof)`: `g (x - mean) / ((n - ddof) y)`, `g` and
    /// `y` broadcast back over the group, `0` where `y = 0`.
    #[track_caller]
    pub fn std_axes_vjp<T: Element>(
        g: &Tensor<T>,
        x: &Tensor<T>,
        y: &Tensor<T>,
        axes: &[isize],
        keepdims: bool,
        ddof: usize,
    ) -> Tensor<T> {
        let axes = axes_of("std_axes_vjp", axes, x.shape());
        std_vjp_impl("std_axes_vjp", g, x, y, &axes, keepdims, ddof)
    }
}
