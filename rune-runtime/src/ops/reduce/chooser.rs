//! The rules of `max` and `min` (the choosers): the derivative goes to the elements equal to the
//! extremum, split evenly among ties (`w` in the table of `reduce.rs`).
//!
//! When the reduced axes are the last ones of a row-major `x` (a row's minimum, k-means'
//! nearest centroid) each rule is one loop over the rows: count the row's ties, then write or
//! sum. Other layouts build the `0`/`1` mask and its counts through views.

use super::*;
use crate::ops::lanes::trailing_rows;

/// The chosen extremum `y` of a group, for testing its elements: equal values, and NaN chooses
/// NaN. `y`'s NaN is decided once, so a loop over a row tests plain comparisons, which the
/// compiler vectorises.
#[derive(Clone, Copy)]
enum Chosen {
    Nan,
    Value(f64),
}

impl Chosen {
    #[inline]
    fn of<T: Element>(y: T) -> Self {
        let y = y.to_real();
        if y.is_nan() {
            Chosen::Nan
        } else {
            Chosen::Value(y)
        }
    }

    /// True where `x` is this extremum.
    #[inline]
    fn is<T: Element>(self, x: T) -> bool {
        match self {
            Chosen::Nan => x.to_real().is_nan(),
            Chosen::Value(y) => x.to_real() == y,
        }
    }

    /// How many elements of `row` are this extremum, as an element.
    #[inline]
    fn ties<T: Element>(self, row: &[T]) -> T {
        T::from_f64(row.iter().filter(|&&v| self.is(v)).count() as f64)
    }
}

/// Where `x` attains the `max`/`min` result `y` (`1`, else `0`), and the number of such
/// elements per result (keepdims shape): ties share the derivative evenly.
#[track_caller]
fn chooser_mask<T: Element>(
    op: &'static str,
    x: &Tensor<T>,
    y: &Tensor<T>,
    axes: &[usize],
    keepdims: bool,
) -> (ArrayD<T>, ArrayD<T>) {
    let yk = expand_back(op, y.view(), x.shape(), axes, keepdims);
    let mask = Zip::from(x.view())
        .and_broadcast(&yk)
        .map_collect(|&xv, &yv| {
            if Chosen::of(yv).is(xv) {
                T::one()
            } else {
                T::zero()
            }
        });
    let counts = sum_view(mask.view(), axes, true);
    (mask, counts)
}

/// The tangent of `max`/`min` over `axes`: the mean of `dx` over each group's ties.
#[track_caller]
pub(super) fn chooser_jvp<T: Element>(
    op: &'static str,
    x: &Tensor<T>,
    y: &Tensor<T>,
    axes: &[usize],
    keepdims: bool,
    dx: &Tensor<T>,
) -> Tensor<T> {
    let shape = reduced_shape(x.shape(), axes, keepdims);
    let rows = trailing_rows(x, axes).zip(dx.as_slice());
    if let (Some(((xs, n), ds)), true) = (rows, dx.shape() == x.shape()) {
        let yk = expand_back(op, y.view(), x.shape(), axes, keepdims);
        let out = xs
            .chunks_exact(n)
            .zip(ds.chunks_exact(n))
            .zip(yk.iter())
            .map(|((row, d), &y)| {
                let y = Chosen::of(y);
                let picked = row.iter().zip(d).filter(|(&v, _)| y.is(v));
                picked.fold(T::zero(), |s, (_, &dv)| s + dv) / y.ties(row)
            })
            .collect();
        return Tensor::from_vec(out, &shape);
    }
    let (mut picked, counts) = chooser_mask(op, x, y, axes, keepdims);
    Zip::from(&mut picked)
        .and(dx.view())
        .for_each(|p, &d| *p = if p.is_exact_zero() { T::zero() } else { d });
    let mean = Zip::from(&sum_view(picked.view(), axes, true))
        .and(&counts)
        .map_collect(|&s, &c| s / c);
    Tensor::from_array(
        mean.into_shape_with_order(IxDyn(&shape))
            .expect("dropping length-1 axes keeps the element count"),
    )
}

/// The cotangent of `max`/`min` over `axes`: each group's cotangent split among its ties, zero
/// elsewhere. A zero cotangent stays an exact zero (no `0 / count`).
#[track_caller]
pub(super) fn chooser_vjp<T: Element>(
    op: &'static str,
    g: &Tensor<T>,
    x: &Tensor<T>,
    y: &Tensor<T>,
    axes: &[usize],
    keepdims: bool,
) -> Tensor<T> {
    let share = |g: T, count: T| {
        if g.is_exact_zero() {
            T::zero()
        } else {
            g / count
        }
    };
    if let Some((xs, n)) = trailing_rows(x, axes) {
        let yk = expand_back(op, y.view(), x.shape(), axes, keepdims);
        let gk = expand_back(op, g.view(), x.shape(), axes, keepdims);
        let mut out = Vec::with_capacity(xs.len());
        for ((row, &y), &g) in xs.chunks_exact(n).zip(yk.iter()).zip(gk.iter()) {
            let y = Chosen::of(y);
            let (s, zero) = (share(g, y.ties(row)), T::zero());
            out.extend(row.iter().map(|&v| if y.is(v) { s } else { zero }));
        }
        return Tensor::from_vec(out, x.shape());
    }
    let (mut out, counts) = chooser_mask(op, x, y, axes, keepdims);
    let gk = expand_back(op, g.view(), x.shape(), axes, keepdims);
    // Each result's cotangent split among its `count` chosen elements.
    let shares = Zip::from(&gk)
        .and(&counts)
        .map_collect(|&g, &c| share(g, c));
    Zip::from(&mut out)
        .and_broadcast(&shares)
        .for_each(|o, &s| *o = if o.is_exact_zero() { T::zero() } else { s });
    Tensor::from_array(out)
}
