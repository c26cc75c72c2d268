//! `logsumexp` over all axes or some, and its rules: the lanes of a row-major tensor's last axes in
//! one vectorised loop, any other axes through views.

use super::*;
use crate::ops::lanes::{logsumexp_rows, softmax_rows, trailing_rows};

/// `logsumexp` over `axes`: one vectorised loop over runs of consecutive elements when the
/// axes are the last ones of a row-major `x` (a mixture's components, a row of logits), the
/// general path on views otherwise.
pub(super) fn logsumexp_tensor<T: Element>(
    x: &Tensor<T>,
    axes: &[usize],
    keepdims: bool,
) -> Tensor<T> {
    if axes.is_empty() {
        return x.clone();
    }
    match trailing_rows(x, axes) {
        Some((xs, n)) => {
            let mut out = vec![T::zero(); xs.len() / n];
            logsumexp_rows(xs, n, &mut out);
            Tensor::from_vec(out, &reduced_shape(x.shape(), axes, keepdims))
        }
        None => Tensor::from_array(logsumexp_view(x.view(), axes, keepdims)),
    }
}

fn logsumexp_view<T: Element>(x: ArrayViewD<'_, T>, axes: &[usize], keepdims: bool) -> ArrayD<T> {
    let m = stable_shift(x.view(), axes);
    let mb = expand_back("logsumexp_axes", m.view(), x.shape(), axes, true);
    let e = Zip::from(&x)
        .and_broadcast(&mb)
        .map_collect(|&v, &m| (v - m).vexp());
    let s = sum_view(e.view(), axes, true);
    let y = Zip::from(&m).and(&s).map_collect(|&m, &s| m + s.vln());
    if keepdims {
        y
    } else {
        let shape = reduced_shape(x.shape(), axes, false);
        y.into_shape_with_order(IxDyn(&shape))
            .expect("dropping length-1 axes keeps the element count")
    }
}

impl<T: Element> Tensor<T> {
    /// `ln(sum(exp(x)))` over all elements, as a 0-d tensor, computed stably.
    #[must_use]
    pub fn logsumexp(&self) -> Tensor<T> {
        logsumexp_tensor(self, &all_axes(self.ndim()), false)
    }
}

/// Rules of these ops (see the table in `ops::reduce`).
pub mod rules {
    use super::super::rules::*;
    use super::*;

    /// `exp(x - m) / sum(exp(x - m))` over `axes` (keepdims, `m` the shift of
    /// [`stable_shift`]): the derivative of `logsumexp` over `axes`, computed from `x` alone.
    ///
    /// `exp(x - y)` with `y` the rounded result is wrong where `y` is large: `y`'s rounding
    /// error (half an ulp, 0.5 at 1e7 in f32) becomes a factor `exp(0.5)` on every weight.
    pub(super) fn logsumexp_weights<T: Element>(x: &Tensor<T>, axes: &[usize]) -> ArrayD<T> {
        if let Some((xs, n)) = trailing_rows(x, axes) {
            let mut out = vec![T::zero(); xs.len()];
            softmax_rows(xs, &mut out, n, false);
            return ArrayD::from_shape_vec(x.shape(), out)
                .expect("the weights have as many elements as x");
        }
        let x = x.view();
        let m = stable_shift(x.view(), axes);
        let mut e = Zip::from(&x)
            .and_broadcast(&m)
            .map_collect(|&v, &m| (v - m).vexp());
        let s = sum_view(e.view(), axes, true);
        Zip::from(&mut e)
            .and_broadcast(&s)
            .for_each(|e, &s| *e /= s);
        e
    }

    #[track_caller]
    pub(super) fn logsumexp_jvp_impl<T: Element>(
        op: &'static str,
        x: &Tensor<T>,
        y: &Tensor<T>,
        axes: &[usize],
        keepdims: bool,
        dx: &Tensor<T>,
    ) -> Tensor<T> {
        // `y` is only checked: the weights come from `x` (see `logsumexp_weights`).
        expand_back(op, y.view(), x.shape(), axes, keepdims);
        let mut t = logsumexp_weights(x, axes);
        Zip::from(&mut t)
            .and(dx.view())
            .for_each(|t, &d| *t = strong_mul(d, *t));
        Tensor::from_array(sum_view(t.view(), axes, keepdims))
    }

    #[track_caller]
    pub(super) fn logsumexp_vjp_impl<T: Element>(
        op: &'static str,
        g: &Tensor<T>,
        x: &Tensor<T>,
        y: &Tensor<T>,
        axes: &[usize],
        keepdims: bool,
    ) -> Tensor<T> {
        expand_back(op, y.view(), x.shape(), axes, keepdims);
        let gb = expand_back(op, g.view(), x.shape(), axes, keepdims);
        if let (Some((xs, n)), Some(gs)) = (trailing_rows(x, axes), g.as_slice()) {
            // One value of `g` a lane, in the lanes' order.
            let mut w = vec![T::zero(); xs.len()];
            softmax_rows(xs, &mut w, n, false);
            for (lane, &g) in w.chunks_exact_mut(n).zip(gs) {
                lane.iter_mut().for_each(|w| *w = strong_mul(g, *w));
            }
            return Tensor::from_vec(w, x.shape());
        }
        let mut w = logsumexp_weights(x, axes);
        Zip::from(&mut w)
            .and_broadcast(&gb)
            .for_each(|w, &g| *w = strong_mul(g, *w));
        Tensor::from_array(w)
    }

    /// JVP of `y = x.logsumexp()`: `sum(dx * softmax(x))`.
    #[track_caller]
    pub fn logsumexp_jvp<T: Element>(x: &Tensor<T>, y: &Tensor<T>, dx: &Tensor<T>) -> Tensor<T> {
        logsumexp_jvp_impl("logsumexp_jvp", x, y, &all_axes(x.ndim()), false, dx)
    }
    /// VJP of `y = x.logsumexp()`: `g * softmax(x)`.
    #[track_caller]
    pub fn logsumexp_vjp<T: Element>(g: &Tensor<T>, x: &Tensor<T>, y: &Tensor<T>) -> Tensor<T> {
        logsumexp_vjp_impl("logsumexp_vjp", g, x, y, &all_axes(x.ndim()), false)
    }

    /// JVP of `y = x.logsumexp_axes(axes, keepdims)`: `sum(dx * softmax(x))` over `axes`.
    #[track_caller]
    pub fn logsumexp_axes_jvp<T: Element>(
        x: &Tensor<T>,
        y: &Tensor<T>,
        axes: &[isize],
        keepdims: bool,
        dx: &Tensor<T>,
    ) -> Tensor<T> {
        let axes = axes_of("logsumexp_axes_jvp", axes, x.shape());
        logsumexp_jvp_impl("logsumexp_axes_jvp", x, y, &axes, keepdims, dx)
    }
    /// VJP of `y = x.logsumexp_axes(axes, keepdims)`: `g * softmax(x)`, the softmax over `axes`.
    #[track_caller]
    pub fn logsumexp_axes_vjp<T: Element>(
        g: &Tensor<T>,
        x: &Tensor<T>,
        y: &Tensor<T>,
        axes: &[isize],
        keepdims: bool,
    ) -> Tensor<T> {
        let axes = axes_of("logsumexp_axes_vjp", axes, x.shape());
        logsumexp_vjp_impl("logsumexp_axes_vjp", g, x, y, &axes, keepdims)
    }
}
