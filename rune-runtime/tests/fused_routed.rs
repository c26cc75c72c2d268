//! `fused_vjp_routed`, the backward pass of a fused region some of whose inputs are windows
//! `x.shrink(..).pad(..)` of another tensor `x`: each window's cotangent goes into `x`'s adjoint
//! at its offset. Checked against what the ops do one after another (the region's cotangents
//! from `fused_vjp`, then `pad`'s VJP and `shrink`'s added into the adjoint), element by element,
//! for windows shifted down and up along the first axis of a vector and of a matrix (whole
//! rows), two windows of one tensor beside the tensor itself, adjoints absent, of their own,
//! shared with another tensor (which must keep its values) or padded and not written out, a
//! cotangent padded with zeros (whose zero elements the loop skips) or with another fill, and
//! the windows the fast path does not take (cut along another axis, a region of at most four
//! elements), in f64 and f32.

use rune_runtime::__private::rules::{pad_vjp, shrink_vjp_into};
use rune_runtime::__private::vmath::Kernels;
use rune_runtime::__private::{
    accumulate, fused_route, fused_vjp, fused_vjp_routed, fused_window, FusedInput,
};
use rune_runtime::{Element, OperandRef, Tensor};

/// `y = a * w + v * s`, `w` and `v` windows of `x`, `s` a scalar: the cotangents of `a`, `w`
/// and `v` are results 0, 1 and 2.
const OPS: &str = "mul 0 1;mul 2 3;add 4 5";

fn cotangents<T: Element>([a, w, _, s]: [T; 4], _: &[T; 0], _: &Kernels, g: T) -> [T; 3] {
    [g * w, g * a, g * s]
}

fn ramp<T: Element>(shape: &[usize], scale: f64) -> Tensor<T> {
    let n: usize = shape.iter().product();
    let v = (0..n)
        .map(|i| T::from_f64(((i * 37) % 101) as f64 * scale - 0.5))
        .collect();
    Tensor::from_vec(v, shape)
}

/// A window of `x`: `shrink` to `cut`, then `pad` by `runs` with `fill`.
struct Window {
    cut: Vec<(usize, usize)>,
    runs: Vec<(usize, usize)>,
    fill: f64,
}

impl Window {
    fn of<T: Element>(&self, x: &Tensor<T>) -> Tensor<T> {
        x.shrink(&self.cut).pad(&self.runs, T::from_f64(self.fill))
    }
}

/// Runs the region's backward pass both ways from the same adjoints (`make` builds a fresh
/// pair, `a`'s and `x`'s, each time) and compares the adjoints; returns the routed pair.
fn both_ways<T: Element>(
    a: &Tensor<T>,
    x: &Tensor<T>,
    [w, v]: [&Window; 2],
    g: &Tensor<T>,
    make: impl Fn() -> [Option<Tensor<T>>; 2],
    tol: f64,
) -> [Option<Tensor<T>>; 2] {
    let (wx, vx) = (w.of(x), v.of(x));
    let inputs = [
        FusedInput::Value(OperandRef::Tensor(a)),
        FusedInput::Value(OperandRef::Tensor(&wx)),
        FusedInput::Value(OperandRef::Tensor(&vx)),
        FusedInput::Value(OperandRef::Scalar(T::from_f64(0.75))),
    ];
    let targets = [(0, 0), (1, 1), (2, 2)];
    let [mut want_a, mut want_x] = make();
    let [ca, cw, cv] = fused_vjp(OPS, inputs, [], targets, g, cotangents);
    accumulate(&mut want_a, ca);
    shrink_vjp_into(&mut want_x, &pad_vjp(&cw, &w.runs), x.shape(), &w.cut);
    shrink_vjp_into(&mut want_x, &pad_vjp(&cv, &v.runs), x.shape(), &v.cut);
    let [mut got_a, mut got_x] = make();
    let routes = [
        fused_route(0),
        fused_window(1, x.shape(), &w.cut, &w.runs),
        fused_window(1, x.shape(), &v.cut, &v.runs),
    ];
    fused_vjp_routed(
        OPS,
        inputs,
        [],
        targets,
        g,
        cotangents,
        routes,
        [&mut got_a, &mut got_x],
    );
    for (what, got, want) in [("a", &got_a, &want_a), ("x", &got_x, &want_x)] {
        let (got, want) = (got.as_ref().expect(what), want.as_ref().expect(what));
        assert_eq!(got.shape(), want.shape(), "{what}'s adjoint: shapes");
        for (i, (p, q)) in got.to_vec().iter().zip(want.to_vec()).enumerate() {
            let (p, q) = (p.to_real(), q.to_real());
            assert!(
                (p - q).abs() <= tol * q.abs().max(1.0),
                "{what}'s adjoint [{i}]: {p} routed against {q} through the ops"
            );
        }
    }
    [got_a, got_x]
}

/// Windows of the first axis of `x` (`rows` rows of `cols`): `x` shifted down by one row with
/// `fill` in front, and shifted up by two rows with zeros behind.
fn shifts(rows: usize, cols: usize, fill: f64) -> [Window; 2] {
    let whole = |w: Vec<(usize, usize)>| {
        let mut w = w;
        if cols > 0 {
            w.push((0, cols));
        }
        w
    };
    let none = |w: Vec<(usize, usize)>| {
        let mut w = w;
        if cols > 0 {
            w.push((0, 0));
        }
        w
    };
    [
        Window {
            cut: whole(vec![(0, rows - 1)]),
            runs: none(vec![(1, 0)]),
            fill,
        },
        Window {
            cut: whole(vec![(2, rows)]),
            runs: none(vec![(0, 2)]),
            fill: 0.0,
        },
    ]
}

fn every_adjoint_and_cotangent<T: Element>(shape: &[usize], tol: f64) {
    let (rows, cols) = (shape[0], shape.get(1).copied().unwrap_or(0));
    let [w, v] = shifts(rows, cols, 1.5);
    let a = ramp::<T>(shape, 0.01);
    let x = ramp::<T>(shape, 0.02);
    let g = ramp::<T>(shape, 0.05);
    // No adjoints yet.
    both_ways(&a, &x, [&w, &v], &g, || [None, None], tol);
    // Adjoints of their own, and one shared with a tensor that must keep its values.
    let kept = ramp::<T>(shape, 0.07);
    let before = kept.to_vec();
    both_ways(
        &a,
        &x,
        [&w, &v],
        &g,
        || [Some(kept.clone()), Some(ramp(shape, 0.03))],
        tol,
    );
    assert!(kept.to_vec() == before, "a shared adjoint was written to");
    // An adjoint that is a padded tensor not written out (a shift of its own).
    let rest = &shape[1..];
    let first_axis = |before: usize, after: usize| {
        let mut runs = vec![(before, after)];
        runs.extend(rest.iter().map(|_| (0, 0)));
        runs
    };
    let with_rows = |r: usize| [&[r][..], rest].concat();
    let padded = || {
        let inside = ramp::<T>(&with_rows(rows - 1), 0.04);
        Some(inside.pad(&first_axis(1, 0), T::from_f64(0.25)))
    };
    both_ways(&a, &x, [&w, &v], &g, || [None, padded()], tol);
    // A cotangent that is zero but for one row (one component's), padded with zeros, and one
    // padded with another value.
    for (fill, from) in [(0.0, rows / 2), (0.5, 1), (0.0, 0), (0.0, rows - 1)] {
        let inside = ramp::<T>(&with_rows(1), 0.3);
        let g = inside.pad(&first_axis(from, rows - from - 1), T::from_f64(fill));
        both_ways(
            &a,
            &x,
            [&w, &v],
            &g,
            || [None, Some(ramp(shape, 0.03))],
            tol,
        );
    }
}

#[test]
fn windows_of_a_vector_and_of_a_matrix_add_where_the_ops_would() {
    for shape in [&[5][..], &[300], &[1000], &[7, 3], &[130, 4]] {
        every_adjoint_and_cotangent::<f64>(shape, 1e-13);
        every_adjoint_and_cotangent::<f32>(shape, 1e-5);
    }
}

#[test]
fn windows_the_fast_path_does_not_take_add_through_the_ops() {
    // Cut along the second axis: a column shifted right, zeros in front.
    let (a, x, g) = (
        ramp::<f64>(&[6, 5], 0.01),
        ramp::<f64>(&[6, 5], 0.02),
        ramp::<f64>(&[6, 5], 0.05),
    );
    let columns = Window {
        cut: vec![(0, 6), (0, 4)],
        runs: vec![(0, 0), (1, 0)],
        fill: 0.0,
    };
    let [_, up] = shifts(6, 5, 0.0);
    both_ways(&a, &x, [&columns, &up], &g, || [None, None], 1e-13);
    // A region of four elements, held inline.
    let [w, v] = shifts(4, 0, 2.0);
    let (a, x, g) = (
        ramp::<f64>(&[4], 0.01),
        ramp::<f64>(&[4], 0.02),
        ramp::<f64>(&[4], 0.05),
    );
    both_ways(
        &a,
        &x,
        [&w, &v],
        &g,
        || [Some(ramp(&[4], 0.3)), None],
        1e-13,
    );
}
