//! `softmax` and `log_softmax` along one axis, shifted by the maximum for stability.
//!
//! Each kernel runs one lane at a time when the axis is contiguous (one pass over memory per
//! lane, in cache) and one plane at a time otherwise (so memory is still walked in order).
//! Along the last axis of row-major operands (attention's scores, logits), the lanes are
//! slices, and each kernel is one loop over them compiled for the CPU's vector instructions
//! ([`vectorised`]).

use ndarray::{ArrayD, Axis, Zip};

use crate::element::{strong_mul, Element};
use crate::error::{panicking_twin, OrPanic, ShapeError};
use crate::ops::lanes::{lane_sum, last_axis_rows, softmax_rows};
use crate::ops::reduce::{checked_axis, max_of, stable_shift, sum_view};
use crate::summation::{along_lanes, sum_all};
use crate::tensor::Tensor;
use crate::vmath::vectorised;

/// `softmax` (or `log_softmax` when `log`) along `axis`.
fn softmax_along<T: Element>(x: &Tensor<T>, axis: usize, log: bool) -> Tensor<T> {
    if let Some(([xs], n)) = last_axis_rows([x], axis) {
        let mut out = vec![T::zero(); xs.len()];
        softmax_rows(xs, &mut out, n, log);
        return Tensor::from_vec(out, x.shape());
    }
    let ax = Axis(axis);
    if !along_lanes(&x.view(), ax) {
        let m = stable_shift(x.view(), &[axis]);
        let mut e = Zip::from(x.view())
            .and_broadcast(&m)
            .map_collect(|&v, &m| (v - m).vexp());
        let s = sum_view(e.view(), &[axis], true);
        if log {
            let ln_s = s.mapv_into(|s| s.vln());
            Zip::from(&mut e)
                .and(x.view())
                .and_broadcast(&m)
                .and_broadcast(&ln_s)
                .for_each(|e, &v, &m, &ln_s| *e = (v - m) - ln_s);
        } else {
            Zip::from(&mut e)
                .and_broadcast(&s)
                .for_each(|e, &s| *e /= s);
        }
        return Tensor::from_array(e);
    }
    let mut out = x.view().to_owned();
    Zip::from(out.lanes_mut(ax)).for_each(|mut line| {
        let m = max_of(line.view());
        // An infinite maximum would turn `x - m` into NaN where `x == m`.
        let m = if m.is_finite() { m } else { T::zero() };
        if log {
            line.mapv_inplace(|v| v - m);
            let ln_s = line.fold(T::zero(), |s, &v| s + v.vexp()).vln();
            line.mapv_inplace(|v| v - ln_s);
        } else {
            line.mapv_inplace(|v| (v - m).vexp());
            let s = sum_all(line.view());
            line.mapv_inplace(|v| v / s);
        }
    });
    Tensor::from_array(out)
}

impl<T: Element> Tensor<T> {
    panicking_twin! {
        /// `exp(x) / sum(exp(x))` along `axis`, computed as `exp(x - max)` normalised.
        ///
        /// # Panics
        /// When `axis` is out of range; the message names the op and the shape.
        pub fn softmax(&self, axis: isize) -> Tensor<T> => self.try_softmax
    }

    /// Like [`Tensor::softmax`], returning an error when `axis` is out of range.
    pub fn try_softmax(&self, axis: isize) -> Result<Tensor<T>, ShapeError> {
        let axis = checked_axis("softmax", axis, self.shape())?;
        Ok(softmax_along(self, axis, false))
    }

    panicking_twin! {
        /// `x - logsumexp(x)` along `axis`, computed as `(x - max) - ln(sum(exp(x - max)))`.
        ///
        /// # Panics
        /// When `axis` is out of range; the message names the op and the shape.
        pub fn log_softmax(&self, axis: isize) -> Tensor<T> => self.try_log_softmax
    }

    /// Like [`Tensor::log_softmax`], returning an error when `axis` is out of range.
    pub fn try_log_softmax(&self, axis: isize) -> Result<Tensor<T>, ShapeError> {
        let axis = checked_axis("log_softmax", axis, self.shape())?;
        Ok(softmax_along(self, axis, true))
    }
}

// ---- rules ----------------------------------------------------------------------------------
//
// Both read only the output `y`; sums run along `axis` and broadcast back:
//
// | op          | JVP                          | VJP                          |
// |-------------|------------------------------|------------------------------|
// | softmax     | y * (dx - sum(dx * y))       | y * (g - sum(g * y))         |
// | log_softmax | dx - sum(dx * exp(y))        | g - exp(y) * sum(g)          |

/// Rules of `softmax` and `log_softmax` (see the module's table).
pub mod rules {
    use super::*;

    #[track_caller]
    fn axis_of<T>(op: &'static str, axis: isize, y: &Tensor<T>) -> usize {
        checked_axis(op, axis, y.shape()).or_panic()
    }

    /// A tensor of `shape` whose lanes of `n` elements `lane(t, y, out)` writes from the lanes
    /// of `t` and `y` (row-major, of `shape`), in one vectorised loop.
    fn rows_into<T: Element>(
        t: &[T],
        y: &[T],
        n: usize,
        shape: &[usize],
        lane: impl Fn(&[T], &[T], &mut [T]),
    ) -> Tensor<T> {
        let mut out = vec![T::zero(); y.len()];
        vectorised(
            #[inline(always)]
            || {
                for ((t, y), o) in t
                    .chunks_exact(n)
                    .zip(y.chunks_exact(n))
                    .zip(out.chunks_exact_mut(n))
                {
                    lane(t, y, o);
                }
            },
        );
        Tensor::from_vec(out, shape)
    }

    /// `y * (t - sum(t * y))` along `axis`: softmax's Jacobian is symmetric, so this is both
    /// the JVP (`t = dx`) and the VJP (`t = g`).
    fn softmax_apply<T: Element>(t: &Tensor<T>, y: &Tensor<T>, axis: usize) -> Tensor<T> {
        if let Some(([ts, ys], n)) = last_axis_rows([t, y], axis) {
            return rows_into(
                ts,
                ys,
                n,
                y.shape(),
                #[inline(always)]
                |t, y, o| {
                    for ((o, &t), &y) in o.iter_mut().zip(t).zip(y) {
                        *o = strong_mul(t, y);
                    }
                    let s = lane_sum(o);
                    for (o, &y) in o.iter_mut().zip(y) {
                        *o -= strong_mul(s, y);
                    }
                },
            );
        }
        let ax = Axis(axis);
        if !along_lanes(&y.view(), ax) {
            let mut out = Zip::from(t.view())
                .and(y.view())
                .map_collect(|&t, &y| strong_mul(t, y));
            let s = sum_view(out.view(), &[axis], true);
            Zip::from(&mut out)
                .and(y.view())
                .and_broadcast(&s)
                .for_each(|o, &y, &s| *o -= strong_mul(s, y));
            return Tensor::from_array(out);
        }
        let mut out = t.view().to_owned();
        Zip::from(out.lanes_mut(ax))
            .and(y.view().lanes(ax))
            .for_each(|mut o, y| {
                let mut s = T::zero();
                for (o, &y) in o.iter_mut().zip(y) {
                    *o = strong_mul(*o, y);
                    s += *o;
                }
                for (o, &y) in o.iter_mut().zip(y) {
                    *o -= strong_mul(s, y);
                }
            });
        Tensor::from_array(out)
    }

    /// JVP of `y = x.softmax(axis)`.
    #[track_caller]
    pub fn softmax_jvp<T: Element>(y: &Tensor<T>, axis: isize, dx: &Tensor<T>) -> Tensor<T> {
        softmax_apply(dx, y, axis_of("softmax_jvp", axis, y))
    }

    /// VJP of `y = x.softmax(axis)`.
    #[track_caller]
    pub fn softmax_vjp<T: Element>(g: &Tensor<T>, y: &Tensor<T>, axis: isize) -> Tensor<T> {
        softmax_apply(g, y, axis_of("softmax_vjp", axis, y))
    }

    /// JVP of `y = x.log_softmax(axis)`: `dx - sum(dx * exp(y))`.
    #[track_caller]
    pub fn log_softmax_jvp<T: Element>(y: &Tensor<T>, axis: isize, dx: &Tensor<T>) -> Tensor<T> {
        let axis = axis_of("log_softmax_jvp", axis, y);
        if let Some(([ds, ys], n)) = last_axis_rows([dx, y], axis) {
            return rows_into(
                ds,
                ys,
                n,
                y.shape(),
                #[inline(always)]
                |d, y, o| {
                    for ((o, &d), &y) in o.iter_mut().zip(d).zip(y) {
                        *o = strong_mul(d, y.vexp());
                    }
                    let s = lane_sum(o);
                    for (o, &d) in o.iter_mut().zip(d) {
                        *o = d - s;
                    }
                },
            );
        }
        let ax = Axis(axis);
        if !along_lanes(&y.view(), ax) {
            let e: ArrayD<T> = Zip::from(dx.view())
                .and(y.view())
                .map_collect(|&d, &y| strong_mul(d, y.vexp()));
            let s = sum_view(e.view(), &[axis], true);
            return Tensor::from_array(
                Zip::from(dx.view())
                    .and_broadcast(&s)
                    .map_collect(|&d, &s| d - s),
            );
        }
        let mut out = dx.view().to_owned();
        Zip::from(out.lanes_mut(ax))
            .and(y.view().lanes(ax))
            .for_each(|mut o, y| {
                let s = o
                    .iter()
                    .zip(y)
                    .fold(T::zero(), |s, (&d, &y)| s + strong_mul(d, y.vexp()));
                o.iter_mut().for_each(|o| *o -= s);
            });
        Tensor::from_array(out)
    }

    /// VJP of `y = x.log_softmax(axis)`: `g - exp(y) * sum(g)`.
    #[track_caller]
    pub fn log_softmax_vjp<T: Element>(g: &Tensor<T>, y: &Tensor<T>, axis: isize) -> Tensor<T> {
        let axis = axis_of("log_softmax_vjp", axis, y);
        if let Some(([gs, ys], n)) = last_axis_rows([g, y], axis) {
            return rows_into(
                gs,
                ys,
                n,
                y.shape(),
                #[inline(always)]
                |g, y, o| {
                    let s = lane_sum(g);
                    for ((o, &g), &y) in o.iter_mut().zip(g).zip(y) {
                        *o = g - strong_mul(s, y.vexp());
                    }
                },
            );
        }
        let ax = Axis(axis);
        if !along_lanes(&y.view(), ax) {
            let s = sum_view(g.view(), &[axis], true);
            return Tensor::from_array(
                Zip::from(g.view())
                    .and(y.view())
                    .and_broadcast(&s)
                    .map_collect(|&g, &y, &s| g - strong_mul(s, y.vexp())),
            );
        }
        let mut out = g.view().to_owned();
        Zip::from(out.lanes_mut(ax))
            .and(y.view().lanes(ax))
            .for_each(|mut o, y| {
                let s = o.sum();
                for (o, &y) in o.iter_mut().zip(y) {
                    *o -= strong_mul(s, y.vexp());
                }
            });
        Tensor::from_array(out)
    }
}
