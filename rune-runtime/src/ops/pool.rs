//! Pooling on NCHW tensors: `max_pool2d` and `avg_pool2d`.
//!
//! Pooling windows have no padding and the output size is rounded down.

use crate::element::{strong_mul, Element};
use crate::error::{panicking_twin, OrPanic, ShapeError};
use crate::ops::window::{Misfit, Window};
use crate::tensor::Tensor;

/// The window of pooling op `op`: `kernel x kernel`, `stride` apart, without padding or
/// dilation.
fn pool_window(
    op: &'static str,
    x: &[usize],
    kernel: usize,
    stride: usize,
) -> Result<Window, ShapeError> {
    let &[n, c, h, w] = x else {
        return Err(ShapeError::new(
            op,
            format!("input {x:?} must be NCHW (4 axes)"),
        ));
    };
    if kernel == 0 || stride == 0 {
        return Err(ShapeError::new(
            op,
            format!("kernel ({kernel}) and stride ({stride}) must be positive (input {x:?})"),
        ));
    }
    Window::new(
        op,
        [n, c, h, w],
        (kernel, kernel),
        stride,
        1,
        0,
        |misfit| match misfit {
            Misfit::TooLarge { .. } => {
                format!("kernel {kernel}x{kernel} is larger than the {h}x{w} images of input {x:?}")
            }
            // Without padding or dilation, neither overflows.
            Misfit::Span | Misfit::Padded => format!("the windows of input {x:?}"),
        },
    )
}

/// Panics unless `t` has `expected` shape.
#[track_caller]
fn check(op: &str, d: &Window, what: &str, t: &Tensor<impl Element>, expected: &[usize]) {
    if t.shape() != expected {
        panic!(
            "{op}: {what} has shape {:?}, expected {expected:?} (input {:?}, kernel {}, \
             stride {})",
            t.shape(),
            d.x_shape(),
            d.kh,
            d.stride
        );
    }
}

/// Whether `v` is a maximum `m` of its window: equal, or both NaN (a NaN window maximum takes
/// the gradient to its NaNs).
#[inline]
fn is_max<T: Element>(v: T, m: T) -> bool {
    v == m || (v.is_nan() && m.is_nan())
}

impl<T: Element> Tensor<T> {
    panicking_twin! {
        /// Max pooling of an NCHW input over `kernel × kernel` windows `stride` apart (no padding,
        /// output size rounded down). A window holding NaN gives NaN.
        ///
        /// # Panics
        /// When the input is not 4-D, `kernel` or `stride` is 0, or `kernel` exceeds the image.
        pub fn max_pool2d(&self, kernel: usize, stride: usize) -> Tensor<T> => self.try_max_pool2d
    }

    /// Like [`Tensor::max_pool2d`], returning a [`ShapeError`] on bad geometry.
    pub fn try_max_pool2d(&self, kernel: usize, stride: usize) -> Result<Tensor<T>, ShapeError> {
        let d = pool_window("max_pool2d", self.shape(), kernel, stride)?;
        let y_shape = d.out_shape(d.c);
        let xs = self.standard_layout();
        let xs = xs.as_slice().expect("standard layout is contiguous");
        let mut out = vec![T::zero(); y_shape.iter().product()];
        let max = |m: T, v: T| if v > m || v.is_nan() { v } else { m };
        if kernel == 2 {
            d.for_each_window2(|[a, b, c, e], o| {
                out[o] = max(max(max(max(T::neg_infinity(), xs[a]), xs[b]), xs[c]), xs[e]);
            });
        } else {
            d.for_each_window(|base, o| {
                out[o] = d.elements(base).map(|i| xs[i]).fold(T::neg_infinity(), max);
            });
        }
        Ok(Tensor::from_vec(out, &y_shape))
    }

    panicking_twin! {
        /// Average pooling of an NCHW input over `kernel × kernel` windows `stride` apart (no
        /// padding, output size rounded down).
        ///
        /// # Panics
        /// When the input is not 4-D, `kernel` or `stride` is 0, or `kernel` exceeds the image.
        pub fn avg_pool2d(&self, kernel: usize, stride: usize) -> Tensor<T> => self.try_avg_pool2d
    }

    /// Like [`Tensor::avg_pool2d`], returning a [`ShapeError`] on bad geometry.
    pub fn try_avg_pool2d(&self, kernel: usize, stride: usize) -> Result<Tensor<T>, ShapeError> {
        let d = pool_window("avg_pool2d", self.shape(), kernel, stride)?;
        let y_shape = d.out_shape(d.c);
        let xs = self.standard_layout();
        let xs = xs.as_slice().expect("standard layout is contiguous");
        let count = T::from_f64((kernel * kernel) as f64);
        let mut out = vec![T::zero(); y_shape.iter().product()];
        d.for_each_window(|base, o| {
            out[o] = d
                .elements(base)
                .map(|i| xs[i])
                .fold(T::zero(), |s, v| s + v)
                / count;
        });
        Ok(Tensor::from_vec(out, &y_shape))
    }
}

// ---- rules ----------------------------------------------------------------------------------
//
// | op         | JVP                                  | VJP                                    |
// |------------|--------------------------------------|----------------------------------------|
// | max_pool2d | mean of dx over each window's maxima | g / (number of maxima) to each maximum |
// | avg_pool2d | avg_pool(dx)                         | g / k² to every window element         |
//
// Ties for a window's maximum split the derivative evenly, as the max reductions do.

/// Rules of pooling (see the module's table).
pub mod rules {
    use super::*;

    /// JVP of `y = x.max_pool2d(kernel, stride)`: in each window, the mean of `dx` over the
    /// elements equal to the window's maximum `y`.
    ///
    /// # Panics
    /// On bad geometry, or when `y` or `dx` does not have the shape it should.
    #[track_caller]
    pub fn max_pool2d_jvp<T: Element>(
        x: &Tensor<T>,
        y: &Tensor<T>,
        kernel: usize,
        stride: usize,
        dx: &Tensor<T>,
    ) -> Tensor<T> {
        let d = pool_window("max_pool2d", x.shape(), kernel, stride).or_panic();
        let y_shape = d.out_shape(d.c);
        check("max_pool2d", &d, "the output", y, &y_shape);
        check("max_pool2d", &d, "the tangent", dx, x.shape());
        let xs = x.standard_layout();
        let xs = xs.as_slice().expect("standard layout is contiguous");
        let ys = y.standard_layout();
        let ys = ys.as_slice().expect("standard layout is contiguous");
        let ds = dx.standard_layout();
        let ds = ds.as_slice().expect("standard layout is contiguous");
        let mut out = vec![T::zero(); y_shape.iter().product()];
        d.for_each_window(|base, o| {
            let m = ys[o];
            let (sum, count) = d
                .elements(base)
                .filter(|&i| is_max(xs[i], m))
                .fold((T::zero(), 0usize), |(s, c), i| (s + ds[i], c + 1));
            out[o] = sum / T::from_f64(count as f64);
        });
        Tensor::from_vec(out, &y_shape)
    }

    /// VJP of `y = x.max_pool2d(kernel, stride)`: each window's cotangent, split evenly among
    /// the window's elements equal to its maximum `y`, summed over overlapping windows.
    ///
    /// # Panics
    /// On bad geometry, or when `y` or `g` does not have the output's shape.
    #[track_caller]
    pub fn max_pool2d_vjp<T: Element>(
        g: &Tensor<T>,
        x: &Tensor<T>,
        y: &Tensor<T>,
        kernel: usize,
        stride: usize,
    ) -> Tensor<T> {
        let d = pool_window("max_pool2d", x.shape(), kernel, stride).or_panic();
        let y_shape = d.out_shape(d.c);
        check("max_pool2d", &d, "the output", y, &y_shape);
        check("max_pool2d", &d, "the cotangent", g, &y_shape);
        let xs = x.standard_layout();
        let xs = xs.as_slice().expect("standard layout is contiguous");
        let ys = y.standard_layout();
        let ys = ys.as_slice().expect("standard layout is contiguous");
        let gs = g.standard_layout();
        let gs = gs.as_slice().expect("standard layout is contiguous");
        let mut gx = vec![T::zero(); xs.len()];
        if kernel == 2 {
            d.for_each_window2(|window, o| {
                if gs[o].is_exact_zero() {
                    return;
                }
                let m = ys[o];
                let maxima = window.map(|i| is_max(xs[i], m));
                let count = maxima.iter().filter(|&&b| b).count();
                let share = if count == 1 {
                    gs[o]
                } else {
                    strong_mul(gs[o], T::one() / T::from_f64(count as f64))
                };
                for (i, is) in window.into_iter().zip(maxima) {
                    if is {
                        gx[i] += share;
                    }
                }
            });
            return Tensor::from_vec(gx, x.shape());
        }
        d.for_each_window(|base, o| {
            if gs[o].is_exact_zero() {
                return;
            }
            let m = ys[o];
            let mut maxima = d.elements(base).filter(|&i| is_max(xs[i], m));
            let first = maxima.next();
            let count = 1 + maxima.count();
            if let (Some(i), 1) = (first, count) {
                gx[i] += gs[o];
            } else {
                let share = strong_mul(gs[o], T::one() / T::from_f64(count as f64));
                for i in d.elements(base).filter(|&i| is_max(xs[i], m)) {
                    gx[i] += share;
                }
            }
        });
        Tensor::from_vec(gx, x.shape())
    }

    /// JVP of `x.avg_pool2d(kernel, stride)`: the average pooling of `dx`.
    ///
    /// # Panics
    /// On bad geometry, as `avg_pool2d` would.
    #[track_caller]
    pub fn avg_pool2d_jvp<T: Element>(dx: &Tensor<T>, kernel: usize, stride: usize) -> Tensor<T> {
        dx.avg_pool2d(kernel, stride)
    }

    /// VJP of `x.avg_pool2d(kernel, stride)` for `x` of shape `x_shape`: each window's
    /// cotangent divided by `kernel²` to every element of the window.
    ///
    /// # Panics
    /// On bad geometry, or when `g` does not have the output's shape.
    #[track_caller]
    pub fn avg_pool2d_vjp<T: Element>(
        g: &Tensor<T>,
        x_shape: &[usize],
        kernel: usize,
        stride: usize,
    ) -> Tensor<T> {
        let d = pool_window("avg_pool2d", x_shape, kernel, stride).or_panic();
        let y_shape = d.out_shape(d.c);
        check("avg_pool2d", &d, "the cotangent", g, &y_shape);
        let gs = g.standard_layout();
        let gs = gs.as_slice().expect("standard layout is contiguous");
        let count = T::from_f64((kernel * kernel) as f64);
        let mut gx = vec![T::zero(); x_shape.iter().product()];
        d.for_each_window(|base, o| {
            if gs[o].is_exact_zero() {
                return;
            }
            let share = gs[o] / count;
            for i in d.elements(base) {
                gx[i] += share;
            }
        });
        Tensor::from_vec(gx, x_shape)
    }
}
