//! Scans: `cumsum` and `cumprod` along one axis (inclusive, as NumPy).
//!
//! The `cumprod` rules run one lane at a time when the axis is contiguous and one plane at a
//! time otherwise, so that memory is walked in order either way.

use ndarray::{ArrayD, ArrayViewMutD, Axis, RemoveAxis, Zip};

use crate::element::{strong_mul, Element};
use crate::error::{OrPanic, ShapeError};
use crate::ops::reduce::checked_axis;
use crate::summation::along_lanes;
use crate::tensor::Tensor;

/// Replaces each element of `v` with `f(running result, element)` in order along `axis`.
fn scan_inplace<T: Element>(mut v: ArrayViewMutD<'_, T>, axis: Axis, f: impl Fn(T, T) -> T) {
    if along_lanes(&v.view(), axis) {
        Zip::from(v.lanes_mut(axis)).for_each(|mut lane| {
            let mut it = lane.iter_mut();
            if let Some(first) = it.next() {
                let mut acc = *first;
                for v in it {
                    acc = f(acc, *v);
                    *v = acc;
                }
            }
        });
    } else {
        v.accumulate_axis_inplace(axis, |&p, c| *c = f(p, *c));
    }
}

/// The inclusive scan of `x` along `axis` with `f`.
fn scan<T: Element>(x: &Tensor<T>, axis: usize, f: impl Fn(T, T) -> T) -> Tensor<T> {
    let mut out = x.as_shared().to_owned();
    scan_inplace(out.view_mut(), Axis(axis), f);
    Tensor::from_array(out)
}

impl<T: Element> Tensor<T> {
    /// The running sum along `axis`: `y[.., i, ..] = x[.., 0, ..] + ... + x[.., i, ..]`.
    ///
    /// # Panics
    /// When `axis` is out of range; the message names the op and the shape.
    #[track_caller]
    #[must_use]
    pub fn cumsum(&self, axis: isize) -> Tensor<T> {
        self.try_cumsum(axis).or_panic()
    }

    /// Like [`Tensor::cumsum`], returning an error when `axis` is out of range.
    pub fn try_cumsum(&self, axis: isize) -> Result<Tensor<T>, ShapeError> {
        let axis = checked_axis("cumsum", axis, self.shape())?;
        Ok(scan(self, axis, |a, b| a + b))
    }

    /// The running product along `axis`: `y[.., i, ..] = x[.., 0, ..] * ... * x[.., i, ..]`.
    ///
    /// # Panics
    /// When `axis` is out of range; the message names the op and the shape.
    #[track_caller]
    #[must_use]
    pub fn cumprod(&self, axis: isize) -> Tensor<T> {
        self.try_cumprod(axis).or_panic()
    }

    /// Like [`Tensor::cumprod`], returning an error when `axis` is out of range.
    pub fn try_cumprod(&self, axis: isize) -> Result<Tensor<T>, ShapeError> {
        let axis = checked_axis("cumprod", axis, self.shape())?;
        Ok(scan(self, axis, |a, b| a * b))
    }
}

// ---- rules ----------------------------------------------------------------------------------
//
// Along one line of the scanned axis, with `y[-1] = 1`:
//
// | op      | JVP                                   | VJP                                      |
// |---------|---------------------------------------|------------------------------------------|
// | cumsum  | cumsum(dx)                            | reverse cumsum of g                      |
// | cumprod | dy[i] = dy[i-1] * x[i] + y[i-1]*dx[i] | r[i] = g[i] + x[i+1] * r[i+1]; y[i-1]*r[i] |
//
// The cumprod VJP is `sum_{k >= i} g[k] * prod_{j <= k, j != i} x[j]`
// `= y[i-1] * (g[i] + g[i+1] x[i+1] + g[i+2] x[i+1] x[i+2] + ...)`: one reverse scan, no
// division, so exact at zeros (after a line's first zero `z` every `y[i-1]` is zero; at `z`
// it is `y[z-1]` times the reverse scan). The JVP is the forward recurrence of the product
// rule, likewise without division.

/// Rules of the scans (see the module's table).
pub mod rules {
    use super::*;

    #[track_caller]
    fn axis_of(op: &'static str, axis: isize, shape: &[usize]) -> usize {
        checked_axis(op, axis, shape).or_panic()
    }

    /// JVP of `x.cumsum(axis)`.
    #[track_caller]
    pub fn cumsum_jvp<T: Element>(axis: isize, dx: &Tensor<T>) -> Tensor<T> {
        let axis = axis_of("cumsum_jvp", axis, dx.shape());
        scan(dx, axis, |a, b| a + b)
    }

    /// VJP of `x.cumsum(axis)`: the reverse running sum of `g` along `axis`.
    #[track_caller]
    pub fn cumsum_vjp<T: Element>(g: &Tensor<T>, axis: isize) -> Tensor<T> {
        let axis = Axis(axis_of("cumsum_vjp", axis, g.shape()));
        let mut out = g.as_shared().to_owned();
        let mut reversed = out.view_mut();
        reversed.invert_axis(axis);
        scan_inplace(reversed, axis, |a, b| a + b);
        Tensor::from_array(out)
    }

    /// JVP of `x.cumprod(axis)`, exact at zeros (no division).
    #[track_caller]
    pub fn cumprod_jvp<T: Element>(x: &Tensor<T>, axis: isize, dx: &Tensor<T>) -> Tensor<T> {
        let ax = Axis(axis_of("cumprod_jvp", axis, x.shape()));
        let mut out = ArrayD::zeros(x.shape());
        let xv = x.view();
        if !along_lanes(&xv, ax) {
            // One plane at a time, carrying the running product and its tangent.
            let mut y_prev = ArrayD::ones(xv.raw_dim().remove_axis(ax));
            let mut dy_prev = ArrayD::zeros(y_prev.raw_dim());
            for i in 0..xv.len_of(ax) {
                Zip::from(&mut dy_prev)
                    .and(&mut y_prev)
                    .and(xv.index_axis(ax, i))
                    .and(dx.as_shared().index_axis(ax, i))
                    .for_each(|dy, y, &x, &d| {
                        *dy = strong_mul(*dy, x) + strong_mul(d, *y);
                        *y *= x;
                    });
                out.index_axis_mut(ax, i).assign(&dy_prev);
            }
            return Tensor::from_array(out);
        }
        Zip::from(out.lanes_mut(ax))
            .and(xv.lanes(ax))
            .and(dx.as_shared().lanes(ax))
            .for_each(|mut o, x, dx| {
                let mut y_prev = T::one();
                let mut dy_prev = T::zero();
                for ((o, &x), &d) in o.iter_mut().zip(x).zip(dx) {
                    dy_prev = strong_mul(dy_prev, x) + strong_mul(d, y_prev);
                    *o = dy_prev;
                    y_prev *= x;
                }
            });
        Tensor::from_array(out)
    }

    /// VJP of `y = x.cumprod(axis)`, exact at zeros: one reverse scan per line, no division.
    #[track_caller]
    pub fn cumprod_vjp<T: Element>(
        g: &Tensor<T>,
        x: &Tensor<T>,
        y: &Tensor<T>,
        axis: isize,
    ) -> Tensor<T> {
        let ax = Axis(axis_of("cumprod_vjp", axis, x.shape()));
        let mut out = ArrayD::zeros(x.shape());
        let (gv, xv, yv) = (g.view(), x.view(), y.view());
        if !along_lanes(&xv, ax) {
            // One plane at a time, backwards, carrying the reverse scan `r`.
            let n = xv.len_of(ax);
            let mut r = ArrayD::zeros(xv.raw_dim().remove_axis(ax));
            for i in (0..n).rev() {
                if i + 1 < n {
                    Zip::from(&mut r)
                        .and(gv.index_axis(ax, i))
                        .and(xv.index_axis(ax, i + 1))
                        .for_each(|r, &g, &x_next| *r = g + strong_mul(*r, x_next));
                } else {
                    r.assign(&gv.index_axis(ax, i));
                }
                if i > 0 {
                    Zip::from(out.index_axis_mut(ax, i))
                        .and(&r)
                        .and(yv.index_axis(ax, i - 1))
                        .for_each(|o, &r, &y_prev| *o = strong_mul(r, y_prev));
                } else {
                    out.index_axis_mut(ax, i).assign(&r);
                }
            }
            return Tensor::from_array(out);
        }
        Zip::from(out.lanes_mut(ax))
            .and(gv.lanes(ax))
            .and(xv.lanes(ax))
            .and(yv.lanes(ax))
            .for_each(|mut o, g, x, y| {
                // Walking backwards: `r` is the reverse scan at `i`, `x_next` is `x[i+1]`,
                // and `y_prev` runs over `y[i-1]`, ending with `y[-1] = 1`.
                let y_prev = y
                    .iter()
                    .rev()
                    .skip(1)
                    .copied()
                    .chain(std::iter::once(T::one()));
                let mut r = T::zero();
                let mut x_next = T::zero();
                for (((o, &g), &x), y_prev) in o
                    .iter_mut()
                    .rev()
                    .zip(g.iter().rev())
                    .zip(x.iter().rev())
                    .zip(y_prev)
                {
                    r = g + strong_mul(r, x_next);
                    *o = strong_mul(r, y_prev);
                    x_next = x;
                }
            });
        Tensor::from_array(out)
    }
}
