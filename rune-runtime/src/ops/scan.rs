//! Scans: `cumsum`, `cumprod` and `logcumsumexp` along one axis (inclusive, as NumPy).
//!
//! The `cumprod` rules run one lane at a time when the axis is contiguous and one plane at a
//! time otherwise, so that memory is walked in order either way.
//!
//! `logcumsumexp` keeps, along each lane, the running maximum `m` and the running sum `s` of
//! `exp(x - m)`, rescaling `s` when the maximum grows: `y = m + ln(s)`, with `s` between 1 and
//! the number of elements, so nothing overflows or underflows whatever the magnitude of `x`.
//! `-inf` elements add nothing (`y` is `-inf` until the first finite one), `+inf` gives `+inf`
//! from there on, and NaN propagates.

use ndarray::{ArrayD, ArrayViewMutD, Axis, RemoveAxis, Zip};

use crate::element::{strong_mul, Element};
use crate::error::{panicking_twin, OrPanic, ShapeError};
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
    let mut out = x.view().to_owned();
    scan_inplace(out.view_mut(), Axis(axis), f);
    Tensor::from_array(out)
}

/// `exp(x - m)` for `x <= m`: the weight of `x` in a log-sum-exp shifted by `m`. Equal
/// infinities weigh `1` (where `x - m` is NaN), as equal finite values do, so that the weights
/// of a group of equal `-inf` (or `+inf`) elements are shared evenly, the limit along equal
/// values.
#[inline]
fn shifted_weight<T: Element>(x: T, m: T) -> T {
    if x.is_infinite() && x == m {
        T::one()
    } else {
        (x - m).vexp()
    }
}

/// The running maximum `m` and running sum `s` of `exp(x - m)` along `axis`: what
/// `logcumsumexp` is (`m + ln(s)`) and its derivative reads (`exp(x_j - m_i) / s_i`).
fn running_logsumexp<T: Element>(x: &Tensor<T>, axis: Axis) -> (ArrayD<T>, ArrayD<T>) {
    let mut m = ArrayD::zeros(x.shape());
    let mut s = ArrayD::zeros(x.shape());
    Zip::from(m.lanes_mut(axis))
        .and(s.lanes_mut(axis))
        .and(x.view().lanes(axis))
        .for_each(|mut m_out, mut s_out, x| {
            let (mut m, mut s) = (T::neg_infinity(), T::zero());
            for ((m_out, s_out), &v) in m_out.iter_mut().zip(s_out.iter_mut()).zip(x) {
                if v > m {
                    s = s * shifted_weight(m, v) + T::one();
                    m = v;
                } else {
                    s += shifted_weight(v, m);
                }
                *m_out = m;
                *s_out = s;
            }
        });
    (m, s)
}

impl<T: Element> Tensor<T> {
    panicking_twin! {
        /// The running sum along `axis`: `y[.., i, ..] = x[.., 0, ..] + ... + x[.., i, ..]`.
        ///
        /// # Panics
        /// When `axis` is out of range; the message names the op and the shape.
        pub fn cumsum(&self, axis: isize) -> Tensor<T> => self.try_cumsum
    }

    /// Like [`Tensor::cumsum`], returning an error when `axis` is out of range.
    pub fn try_cumsum(&self, axis: isize) -> Result<Tensor<T>, ShapeError> {
        let axis = checked_axis("cumsum", axis, self.shape())?;
        Ok(scan(self, axis, |a, b| a + b))
    }

    panicking_twin! {
        /// The running product along `axis`: `y[.., i, ..] = x[.., 0, ..] * ... * x[.., i, ..]`.
        ///
        /// # Panics
        /// When `axis` is out of range; the message names the op and the shape.
        pub fn cumprod(&self, axis: isize) -> Tensor<T> => self.try_cumprod
    }

    /// Like [`Tensor::cumprod`], returning an error when `axis` is out of range.
    pub fn try_cumprod(&self, axis: isize) -> Result<Tensor<T>, ShapeError> {
        let axis = checked_axis("cumprod", axis, self.shape())?;
        Ok(scan(self, axis, |a, b| a * b))
    }

    panicking_twin! {
        /// The running `ln(sum(exp(x)))` along `axis`:
        /// `y[.., i, ..] = ln(exp(x[.., 0, ..]) + ... + exp(x[.., i, ..]))`, computed stably (see
        /// the module docs), as JAX's `lax.cumlogsumexp` and PyTorch's `logcumsumexp`.
        ///
        /// ```
        /// use rune_runtime::Tensor;
        /// let x = Tensor::from_vec(vec![f64::NEG_INFINITY, 1000.0, 1000.0], &[3]);
        /// let y = x.logcumsumexp(0).to_vec();
        /// assert_eq!(y[..2], [f64::NEG_INFINITY, 1000.0]);
        /// assert!((y[2] - (1000.0 + 2f64.ln())).abs() < 1e-12);
        /// ```
        ///
        /// # Panics
        /// When `axis` is out of range; the message names the op and the shape.
        pub fn logcumsumexp(&self, axis: isize) -> Tensor<T> => self.try_logcumsumexp
    }

    /// Like [`Tensor::logcumsumexp`], returning an error when `axis` is out of range.
    pub fn try_logcumsumexp(&self, axis: isize) -> Result<Tensor<T>, ShapeError> {
        let axis = checked_axis("logcumsumexp", axis, self.shape())?;
        let (mut m, s) = running_logsumexp(self, Axis(axis));
        Zip::from(&mut m).and(&s).for_each(|m, &s| *m += s.vln());
        Ok(Tensor::from_array(m))
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
// | logcumsumexp | sum_{j<=i} w[j,i] dx[j]       | sum_{i>=j} g[i] w[j,i]                   |
//
// The cumprod VJP is `sum_{k >= i} g[k] * prod_{j <= k, j != i} x[j]`
// `= y[i-1] * (g[i] + g[i+1] x[i+1] + g[i+2] x[i+1] x[i+2] + ...)`: one reverse scan, no
// division, so exact at zeros (after a line's first zero `z` every `y[i-1]` is zero; at `z`
// it is `y[z-1]` times the reverse scan). The JVP is the forward recurrence of the product
// rule, likewise without division.
//
// `logcumsumexp`'s weights `w[j,i] = exp(x[j] - y[i])` are the softmax of the prefix `x[..=i]`,
// computed as `exp(x[j] - m[i]) / s[i]` from the running maximum and sum of the forward pass
// (recomputed from `x`), not from the rounded `y` (see `logsumexp_weights` in `reduce`). The
// JVP carries `sum_j exp(x[j] - m) dx[j]` along with `s`, rescaled with it. The VJP is one
// reverse scan: `exp(x[j] - m[i]) = exp(x[j] - m[j]) exp(m[j] - m[i])`, so with
// `q[j] = g[j] / s[j] + exp(m[j] - m[j+1]) q[j+1]`, `gx[j] = exp(x[j] - m[j]) q[j]`; every
// exponent is `<= 0` since `m` only grows. At `-inf` the weights follow `shifted_weight`: a
// `-inf` element has weight `0` once a finite one precedes or joins it, and `1/k` among `k`
// leading `-inf` (`y = -inf` there, and `y[0] = x[0]` has derivative `1`).

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
        let mut out = g.view().to_owned();
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
                    .and(dx.view().index_axis(ax, i))
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
            .and(dx.view().lanes(ax))
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

    /// JVP of `x.logcumsumexp(axis)`: `sum_{j<=i} exp(x[j] - y[i]) dx[j]`, the softmax of each
    /// prefix applied to `dx`.
    #[track_caller]
    pub fn logcumsumexp_jvp<T: Element>(x: &Tensor<T>, axis: isize, dx: &Tensor<T>) -> Tensor<T> {
        let ax = Axis(axis_of("logcumsumexp_jvp", axis, x.shape()));
        let mut out = ArrayD::zeros(x.shape());
        Zip::from(out.lanes_mut(ax))
            .and(x.view().lanes(ax))
            .and(dx.view().lanes(ax))
            .for_each(|mut o, x, dx| {
                let (mut m, mut s, mut t) = (T::neg_infinity(), T::zero(), T::zero());
                for ((o, &v), &d) in o.iter_mut().zip(x).zip(dx) {
                    if v > m {
                        let w = shifted_weight(m, v);
                        s = s * w + T::one();
                        t = strong_mul(t, w) + d;
                        m = v;
                    } else {
                        let w = shifted_weight(v, m);
                        s += w;
                        t += strong_mul(d, w);
                    }
                    // A zero tangent stays zero where `s` is NaN.
                    *o = if t.is_exact_zero() { T::zero() } else { t / s };
                }
            });
        Tensor::from_array(out)
    }

    /// VJP of `x.logcumsumexp(axis)`: `sum_{i>=j} g[i] exp(x[j] - y[i])`, one reverse scan.
    #[track_caller]
    pub fn logcumsumexp_vjp<T: Element>(g: &Tensor<T>, x: &Tensor<T>, axis: isize) -> Tensor<T> {
        let ax = Axis(axis_of("logcumsumexp_vjp", axis, x.shape()));
        let (m, s) = running_logsumexp(x, ax);
        let mut out = ArrayD::zeros(x.shape());
        Zip::from(out.lanes_mut(ax))
            .and(g.view().lanes(ax))
            .and(x.view().lanes(ax))
            .and(m.lanes(ax))
            .and(s.lanes(ax))
            .for_each(|mut o, g, x, m, s| {
                // Walking backwards, `q` is the reverse scan at `i` and `m_next` is `m[i+1]`.
                let mut q = T::zero();
                let mut m_next = None;
                for i in (0..x.len()).rev() {
                    let carried = match m_next {
                        Some(m_next) => strong_mul(q, shifted_weight(m[i], m_next)),
                        None => T::zero(),
                    };
                    let own = if g[i].is_exact_zero() {
                        T::zero()
                    } else {
                        g[i] / s[i]
                    };
                    q = own + carried;
                    o[i] = strong_mul(q, shifted_weight(x[i], m[i]));
                    m_next = Some(m[i]);
                }
            });
        Tensor::from_array(out)
    }
}
