//! Fused regions whose inputs are views in other layouts than row-major (reversed, transposed,
//! permuted, a block of a larger tensor, a slice with steps, column-major, views joined by
//! `concat` along an inner axis, broadcast), through every entry point of `#[differentiable]`'s fused
//! code, against the same region op by op (the tensor ops and their rules, then `sum`, `mean`,
//! `sum_axes`, `mean_axes`), bit for bit, in f32, f64 and dual numbers; a broadcast input's
//! cotangent, a sum added in another order, to a few ulps of its largest element.
//!
//! Op by op, each elementwise op writes its result row-major whatever its operands' layouts,
//! and a row-major tensor is summed in row-major order, the order of the fused loops.

use rune_runtime::__private::vmath::Kernels;
use rune_runtime::__private::{
    fused_jvp, fused_map, fused_reduce, fused_reduce_axes, fused_reduce_axes_jvp,
    fused_reduce_axes_vjp, fused_reduce_jvp, fused_reduce_vjp, FusedInput, Reduction,
};
use rune_runtime::__private::{rules, scalar, strong_mul};
use rune_runtime::ndarray::{s, Array2, Ix2, ShapeBuilder};
use rune_runtime::{concat, Dual, Element, OperandRef, Tensor};

/// An element type of the tests: made from two numbers (a dual number's tangent part from the
/// second) and compared by its bits.
trait Elem: Element {
    /// The unit roundoff of the real numbers it is made of.
    const EPS: f64;
    fn make(re: f64, du: f64) -> Self;
    fn bits(self) -> [u64; 2];
    /// Its real number and, for a dual number, its tangent part.
    fn parts(self) -> [f64; 2];
}

impl Elem for f32 {
    const EPS: f64 = f32::EPSILON as f64;
    fn parts(self) -> [f64; 2] {
        [self.into(), 0.0]
    }
    fn make(re: f64, _: f64) -> f32 {
        re as f32
    }
    fn bits(self) -> [u64; 2] {
        [self.to_bits().into(), 0]
    }
}

impl Elem for f64 {
    const EPS: f64 = f64::EPSILON;
    fn parts(self) -> [f64; 2] {
        [self, 0.0]
    }
    fn make(re: f64, _: f64) -> f64 {
        re
    }
    fn bits(self) -> [u64; 2] {
        [self.to_bits(), 0]
    }
}

impl<T: Elem> Elem for Dual<T> {
    const EPS: f64 = T::EPS;
    fn parts(self) -> [f64; 2] {
        [self.re.parts()[0], self.du.parts()[0]]
    }
    fn make(re: f64, du: f64) -> Dual<T> {
        Dual::new(T::make(re, 0.0), T::make(du, 0.0))
    }
    fn bits(self) -> [u64; 2] {
        [self.re.bits()[0], self.du.bits()[0]]
    }
}

/// A row-major tensor of `shape` whose elements, of mixed magnitudes, show the order of the
/// additions of their sums in the last bits.
fn numbered<T: Elem>(shape: &[usize], phase: f64) -> Tensor<T> {
    let n = shape.iter().product();
    Tensor::from_vec(
        (0..n)
            .map(|i| {
                let x = i as f64 * 0.37 + phase;
                T::make(x.sin() * 3.0 + (i % 7) as f64 * 100.0, (x * 0.3).cos())
            })
            .collect(),
        shape,
    )
}

/// Whether `got` and `want` are the same numbers, to the bit, in the same shape.
#[track_caller]
fn same<T: Elem>(what: &str, got: &Tensor<T>, want: &Tensor<T>) {
    assert_eq!(got.shape(), want.shape(), "{what}: shapes");
    let bits = |t: &Tensor<T>| t.to_vec().into_iter().map(T::bits).collect::<Vec<_>>();
    assert_eq!(bits(got), bits(want), "{what}");
}

/// Whether `got` and `want`, a cotangent, are the same numbers: to the bit when its input has
/// the region's shape (`full`), else to 64 units in the last place of `want`'s largest element.
/// A broadcast input's cotangent is a sum over the axes it was broadcast along, which the fused
/// loop adds as it makes the terms and the op-by-op rules add afterwards, in another order (and
/// for `a`, before `sin`'s derivative multiplies them rather than after).
#[track_caller]
fn same_cotangent<T: Elem>(what: &str, got: &Tensor<T>, want: &Tensor<T>, full: bool) {
    if full {
        return same(what, got, want);
    }
    assert_eq!(got.shape(), want.shape(), "{what}: shapes");
    for part in 0..2 {
        let scale = want
            .to_vec()
            .into_iter()
            .fold(0.0f64, |m, w| m.max(w.parts()[part].abs()));
        for (g, w) in got.to_vec().into_iter().zip(want.to_vec()) {
            let (g, w) = (g.parts()[part], w.parts()[part]);
            assert!(
                (g - w).abs() <= 64.0 * T::EPS * scale,
                "{what}: {g} against {w}"
            );
        }
    }
}

/// The region `sin(a) * b` with the tangent `ta` of `a`: `a` and `ta` in one layout, `b` (in
/// its own) broadcast against `a`.
struct Case<T> {
    name: &'static str,
    a: Tensor<T>,
    ta: Tensor<T>,
    b: Tensor<T>,
}

impl<T: Elem> Case<T> {
    /// `a` and `ta` made by `view` from row-major tensors of `shape`.
    fn viewed(
        name: &'static str,
        shape: &[usize],
        view: impl Fn(Tensor<T>) -> Tensor<T>,
        b: Tensor<T>,
    ) -> Case<T> {
        let (a, ta) = (view(numbered(shape, 0.0)), view(numbered(shape, 1.0)));
        Case { name, a, ta, b }
    }

    /// Whether `a` has the region's shape.
    fn a_is_full(&self) -> bool {
        self.a.shape() == self.y().shape()
    }

    /// Whether `b` has the region's shape.
    fn b_is_full(&self) -> bool {
        self.b.shape() == self.y().shape()
    }

    /// The region's value op by op.
    fn y(&self) -> Tensor<T> {
        &self.a.sin() * &self.b
    }

    /// The region's tangent op by op.
    fn dy(&self) -> Tensor<T> {
        let s = self.a.sin();
        let ds = rules::sin_jvp(&self.a, &self.ta);
        rules::mul_jvp(&s, &self.b, &self.y(), Some(&ds), None)
    }

    /// The cotangents of `a` and `b` op by op, from the region's cotangent `g`.
    fn pulled(&self, g: &Tensor<T>) -> [Tensor<T>; 2] {
        let s = self.a.sin();
        let gs = rules::mul_vjp_lhs(g, s.shape(), &self.b);
        [
            rules::sin_vjp(&gs, &self.a),
            rules::mul_vjp_rhs(g, &s, self.b.shape()),
        ]
    }

    fn inputs(&self) -> [OperandRef<'_, T>; 2] {
        [OperandRef::Tensor(&self.a), OperandRef::Tensor(&self.b)]
    }
}

/// The cases: `a` in every layout, `b` a scalar, a row, a column, or a view itself.
fn cases<T: Elem>() -> Vec<Case<T>> {
    let n = numbered::<T>;
    vec![
        Case::viewed("reversed [17]", &[17], |t| t.flip(&[0]), n(&[], 2.0)),
        // More than one block of 128, with `b` reversed too.
        Case::viewed(
            "reversed [1037]",
            &[1037],
            |t| t.flip(&[0]),
            n(&[1037], 2.0).flip(&[0]),
        ),
        Case::viewed(
            "reversed along both axes [37, 300]",
            &[37, 300],
            |t| t.flip(&[0, 1]),
            n(&[300], 2.0),
        ),
        Case::viewed(
            "transposed [300, 37]",
            &[37, 300],
            |t| t.t(),
            n(&[300, 1], 2.0),
        ),
        // Lanes of 300 along the last axis, `b` a reversed row broadcast with a stride of zero.
        Case::viewed(
            "transposed [37, 300]",
            &[300, 37],
            |t| t.t(),
            n(&[300], 2.0).flip(&[0]),
        ),
        Case::viewed(
            "permuted [60, 4, 5]",
            &[4, 5, 60],
            |t| t.permute(&[2, 0, 1]),
            n(&[5, 4], 2.0).t(),
        ),
        Case::viewed(
            "permuted [4, 5, 140]",
            &[5, 4, 140],
            |t| t.permute(&[1, 0, 2]),
            n(&[140], 2.0),
        ),
        Case::viewed(
            "a block [29, 287]",
            &[37, 300],
            |t| t.shrink(&[(1, 30), (3, 290)]),
            n(&[287], 2.0),
        ),
        Case::viewed(
            "every third row backwards, every other column [13, 150]",
            &[37, 300],
            |t| {
                let mut v = t.to_shared().into_dimensionality::<Ix2>().unwrap();
                v.slice_collapse(s![..;-3, 1..;2]);
                Tensor::from(v)
            },
            n(&[13, 1], 2.0),
        ),
        Case::viewed(
            "column-major [37, 300]",
            &[37, 300],
            |t| {
                let v = Array2::from_shape_vec((37, 300).f(), t.t().to_vec()).unwrap();
                Tensor::from(v)
            },
            n(&[1, 300], 2.0),
        ),
        // `concat` of views along an inner axis lays its result out with that axis outermost
        // in memory (of row-major inputs, row-major).
        Case::viewed(
            "transposed views joined along the columns [37, 300]",
            &[300, 37],
            |t| {
                let part = |from, to| t.shrink(&[(from, to), (0, 37)]).t();
                concat(&[part(0, 100), part(100, 300)], 1)
            },
            n(&[37, 1], 2.0),
        ),
        // Small views read whole (a layer's weights cut from a packed matrix, as a loop over
        // steps reads them), of one, two and three axes.
        Case::viewed(
            "a row of a packed matrix [7]",
            &[8, 7],
            |t| t.shrink(&[(2, 3), (0, 7)]).reshape(&[7]).flip(&[0]),
            n(&[7], 2.0),
        ),
        Case::viewed(
            "rows cut from a packed matrix [2, 7]",
            &[2, 56],
            |t| {
                // Through ndarray: `shrink` copies a small part like this one out row-major.
                let mut v = t.to_shared().into_dimensionality::<Ix2>().unwrap();
                v.slice_collapse(s![.., 21..28]);
                Tensor::from(v)
            },
            n(&[1, 7], 2.0),
        ),
        Case::viewed(
            "a small permuted tensor [4, 2, 5]",
            &[2, 5, 4],
            |t| t.permute(&[2, 0, 1]),
            n(&[5], 2.0),
        ),
        // `a` itself broadcast: a reversed row against a column.
        Case::viewed(
            "a reversed row [1, 300] against a column [37, 1]",
            &[1, 300],
            |t| t.flip(&[1]),
            n(&[37, 1], 2.0),
        ),
    ]
}

const OPS: &str = "sin 0 0;mul 2 1";

fn value<T: Elem>([a, b]: [T; 2], _: &[T; 0], k: &Kernels) -> T {
    scalar::sin::value_in(a, k) * b
}

fn tangent<T: Elem>([a, b]: [T; 2], _: &[T; 0], k: &Kernels, [ta]: [T; 1]) -> (T, T) {
    let ds = scalar::sin::tangent_in(ta, scalar::Input(a), k);
    (value([a, b], &[], k), strong_mul(ds, b))
}

fn cotangents<T: Elem>([a, b]: [T; 2], _: &[T; 0], k: &Kernels, g: T) -> [T; 2] {
    let s = scalar::sin::value_in(a, k);
    [
        scalar::sin::tangent_in(strong_mul(g, b), scalar::Input(a), k),
        strong_mul(g, s),
    ]
}

fn partials<T: Elem>(x: [T; 2], l: &[T; 0], k: &Kernels, seed: T) -> (T, [T; 2]) {
    (value(x, l, k), cotangents(x, l, k, seed))
}

/// `fused_map` and `fused_jvp`: row-major, as op by op.
fn maps<T: Elem>() {
    for case in cases::<T>() {
        let what = case.name;
        assert!(!case.a.is_standard_layout(), "{what}");
        let y = case.y();
        assert!(y.is_standard_layout(), "{what}");
        same(what, &fused_map(OPS, case.inputs(), [], value), &y);
        let (v, t) = fused_jvp(OPS, case.inputs(), [], [&case.ta], tangent);
        same(what, &v, &y);
        same(what, &t, &case.dy());
    }
}

/// `fused_reduce`, `fused_reduce_jvp` and `fused_reduce_vjp` (the value and the partials).
fn full_reductions<T: Elem>() {
    for case in cases::<T>() {
        let (y, dy) = (case.y(), case.dy());
        for reduction in [Reduction::Sum, Reduction::Mean] {
            let what = &format!("{}, {reduction:?}", case.name);
            let (want, want_tangent, g) = match reduction {
                Reduction::Sum => (
                    y.sum(),
                    dy.sum(),
                    rules::sum_vjp(&Tensor::scalar(T::one()), y.shape()),
                ),
                Reduction::Mean => (
                    y.mean(),
                    dy.mean(),
                    rules::mean_vjp(&Tensor::scalar(T::one()), y.shape()),
                ),
            };
            same(
                what,
                &fused_reduce(OPS, case.inputs(), [], reduction, value),
                &want,
            );
            let (v, t) = fused_reduce_jvp(OPS, case.inputs(), [], reduction, [&case.ta], tangent);
            same(what, &v, &want);
            same(what, &t, &want_tangent);
            let (v, [da, db]) = fused_reduce_vjp(
                OPS,
                case.inputs(),
                [],
                reduction,
                [(0, 0), (1, 1)],
                partials,
            );
            same(what, &v, &want);
            let [want_da, want_db] = case.pulled(&g);
            same_cotangent(what, &da, &want_da, case.a_is_full());
            same_cotangent(what, &db, &want_db, case.b_is_full());
        }
    }
}

/// The axes a region of `ndim` axes is reduced over, and `keepdims`: the last ones (summed as
/// the loop makes the values), others (the values made first), all, none.
fn axes_for(ndim: usize) -> Vec<(&'static [isize], bool)> {
    match ndim {
        1 => vec![(&[-1], false), (&[0], true)],
        2 => vec![
            (&[-1], false),
            (&[1], true),
            (&[0], false),
            (&[0, 1], true),
            (&[], false),
        ],
        _ => vec![
            (&[-1], true),
            (&[1, 2], false),
            (&[0], false),
            (&[0, 2], true),
            (&[2, 0, 1], false),
        ],
    }
}

/// `fused_reduce_axes`, `fused_reduce_axes_jvp` and `fused_reduce_axes_vjp`.
fn reductions_over_axes<T: Elem>() {
    for case in cases::<T>() {
        let (y, dy) = (case.y(), case.dy());
        for (axes, keepdims) in axes_for(y.ndim()) {
            for reduction in [Reduction::Sum, Reduction::Mean] {
                let what = &format!("{}, {reduction:?} over {axes:?}", case.name);
                let reduce = |t: &Tensor<T>| match reduction {
                    Reduction::Sum => t.sum_axes(axes, keepdims),
                    Reduction::Mean => t.mean_axes(axes, keepdims),
                };
                let r = fused_reduce_axes(OPS, case.inputs(), [], reduction, axes, keepdims, value);
                same(what, &r, &reduce(&y));
                let (v, t) = fused_reduce_axes_jvp(
                    OPS,
                    case.inputs(),
                    [],
                    reduction,
                    axes,
                    keepdims,
                    [&case.ta],
                    tangent,
                );
                same(what, &v, &reduce(&y));
                same(what, &t, &reduce(&dy));
                // A cotangent of the reduction's shape, spread as `sum_axes` and `mean_axes`
                // spread it.
                let g = reduce(&dy);
                let spread = match reduction {
                    Reduction::Sum => rules::sum_axes_vjp(&g, y.shape(), axes, keepdims),
                    Reduction::Mean => rules::mean_axes_vjp(&g, y.shape(), axes, keepdims),
                };
                let [da, db] = fused_reduce_axes_vjp(
                    OPS,
                    case.inputs().map(FusedInput::Value),
                    [],
                    reduction,
                    axes,
                    keepdims,
                    [(0, 0), (1, 1)],
                    &g,
                    cotangents,
                );
                let [want_da, want_db] = case.pulled(&spread);
                same_cotangent(what, &da, &want_da, case.a_is_full());
                same_cotangent(what, &db, &want_db, case.b_is_full());
            }
        }
    }
}

macro_rules! for_elements {
    ($($check:ident: $($name:ident $t:ty),*;)*) => {$($(
        #[test]
        fn $name() {
            $check::<$t>();
        }
    )*)*};
}

for_elements! {
    maps: maps_f32 f32, maps_f64 f64, maps_dual_f32 Dual<f32>, maps_dual_f64 Dual<f64>;
    full_reductions: full_reductions_f32 f32, full_reductions_f64 f64,
        full_reductions_dual_f32 Dual<f32>, full_reductions_dual_f64 Dual<f64>;
    reductions_over_axes: reductions_over_axes_f32 f32, reductions_over_axes_f64 f64,
        reductions_over_axes_dual_f32 Dual<f32>, reductions_over_axes_dual_f64 Dual<f64>;
}
