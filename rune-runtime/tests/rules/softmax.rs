//! `softmax` and `log_softmax` along each axis, checked against their compositions.

use rune_runtime::__private::rules::*;
use rune_runtime::{Element, Tensor};

use crate::common::{assert_close, tensor, uniform, Case};

/// `(label, shape, axis)`
const AXIS_CASES: &[(&str, &[usize], isize)] = &[
    ("1-d", &[5], 0),
    ("rows", &[3, 4], -1),
    ("columns", &[3, 4], 0),
    ("middle axis", &[2, 3, 4], 1),
    // Row-major lanes along the last axis take the vectorised kernels; lanes over 128
    // elements are summed pairwise.
    ("last axis of 3-d", &[2, 3, 5], -1),
    ("long rows", &[2, 300], 1),
    // Wide planes across a strided axis take the plane-by-plane kernels.
    ("columns of a wide tensor", &[3, 20], 0),
    ("middle axis of a wide tensor", &[2, 3, 16], -2),
];

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    for (i, &(label, shape, axis)) in AXIS_CASES.iter().enumerate() {
        let x = uniform::<T>(shape, -2.0, 2.0, 600 + i as u64);
        cases.push(Case::new(
            "softmax",
            label,
            vec![x.clone()],
            move |x| x[0].softmax(axis),
            move |x, t| softmax_jvp(&x[0].softmax(axis), axis, &t[0]),
            move |x, g| vec![softmax_vjp(g, &x[0].softmax(axis), axis)],
        ));
        cases.push(Case::new(
            "log_softmax",
            label,
            vec![x],
            move |x| x[0].log_softmax(axis),
            move |x, t| log_softmax_jvp(&x[0].log_softmax(axis), axis, &t[0]),
            move |x, g| vec![log_softmax_vjp(g, &x[0].log_softmax(axis), axis)],
        ));
    }
    cases
}

#[test]
fn softmax_agrees_with_its_composition() {
    // [3, 20] along axis 0 takes the plane-by-plane kernel, the others one lane at a time.
    for shape in [[3, 4], [3, 20]] {
        let x = uniform::<f64>(&shape, -3.0, 3.0, 70);
        for (axis, reduce) in [(1isize, [-1isize]), (0, [0]), (-2, [-2])] {
            let lse = x.logsumexp_axes(&reduce, true);
            let expected = (&x - &lse).map(|v| v.exp());
            assert_close(&x.softmax(axis), &expected.to_vec(), 1e-14);
            assert_close(&x.log_softmax(axis), &(&x - &lse).to_vec(), 1e-14);
        }
    }
    let x = uniform::<f64>(&[3, 4], -3.0, 3.0, 70);
    // Each row of softmax sums to one.
    assert_close(
        &x.softmax(-1).sum_axes(&[-1], false),
        &[1.0, 1.0, 1.0],
        1e-15,
    );
}

#[test]
fn softmax_is_stable() {
    let x = tensor::<f32>(
        &[1000.0, 1000.0, f64::NEG_INFINITY, -1000.0, -1000.0, -1000.0],
        &[2, 3],
    );
    assert_close(
        &x.softmax(1),
        &[0.5, 0.5, 0.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0],
        1e-6,
    );
    let l = x.log_softmax(1).to_vec();
    let ln2 = 2f32.ln();
    let ln3 = 3f32.ln();
    assert_eq!(l[2], f32::NEG_INFINITY);
    assert_close(
        &tensor::<f32>(&[l[0] as f64, l[1] as f64, l[3] as f64], &[3]),
        &[-ln2 as f64, -ln2 as f64, -ln3 as f64],
        1e-6,
    );
}

#[test]
fn softmax_rules_by_hand() {
    // x = [0, ln 3]: y = [1/4, 3/4].
    let x = tensor::<f64>(&[0.0, 3f64.ln()], &[2]);
    let y = x.softmax(0);
    assert_close(&y, &[0.25, 0.75], 1e-15);
    let g = tensor::<f64>(&[1.0, 0.0], &[2]);
    // y * (g - <g, y>) = [1/4 * 3/4, 3/4 * (-1/4)]
    assert_close(&softmax_vjp(&g, &y, 0), &[0.1875, -0.1875], 1e-15);
    assert_close(&softmax_jvp(&y, 0, &g), &[0.1875, -0.1875], 1e-15);
    let ly = x.log_softmax(0);
    // g - exp(y) * sum(g) = [1 - 1/4, -3/4]
    assert_close(&log_softmax_vjp(&g, &ly, 0), &[0.75, -0.75], 1e-15);
    // dx - <dx, exp(y)> with dx = [1, 0]: [3/4, -1/4]
    assert_close(&log_softmax_jvp(&ly, 0, &g), &[0.75, -0.25], 1e-15);
    // Along columns of a 2x2: each column is its own softmax.
    let x2 = tensor::<f64>(&[0.0, 5.0, 3f64.ln(), 5.0], &[2, 2]);
    let y2 = x2.softmax(0);
    assert_close(&y2, &[0.25, 0.5, 0.75, 0.5], 1e-15);
    let g2 = tensor::<f64>(&[1.0, 2.0, 0.0, 0.0], &[2, 2]);
    assert_close(
        &softmax_vjp(&g2, &y2, -2),
        &[0.1875, 0.5, -0.1875, -0.5],
        1e-15,
    );
}

#[test]
fn zero_cotangents_stay_zero() {
    let y = tensor::<f64>(&[f64::INFINITY, 0.0], &[2]);
    let z = tensor::<f64>(&[0.0, 0.0], &[2]);
    assert_close(&softmax_vjp(&z, &y, 0), &[0.0, 0.0], 0.0);
    assert_close(&log_softmax_vjp(&z, &y, 0), &[0.0, 0.0], 0.0);
}

#[test]
fn bad_axis_names_the_op_and_the_shape() {
    let x = Tensor::<f64>::zeros(&[3]);
    let panic = std::panic::catch_unwind(|| x.softmax(1)).unwrap_err();
    let msg = panic.downcast_ref::<String>().unwrap();
    assert!(msg.starts_with("softmax:") && msg.contains("[3]"), "{msg}");
    let err = Tensor::<f64>::scalar(1.0).try_log_softmax(0).unwrap_err();
    assert_eq!(err.op(), "log_softmax");
    assert!(err.to_string().contains("[]"), "{err}");
}

/// `softmax` and `log_softmax` and their rules read only the output, which is computed shifted
/// by the maximum: at large inputs they stay exact where `exp(x - logsumexp(x))` would not.
fn softmax_rules_at_large_inputs<T: Element>(magnitudes: &[f64], tol: f64) {
    for &c in magnitudes {
        for c in [c, -c] {
            // Rows of equal values (along lanes), and the same across planes (axis 0 of [3, 20]).
            for (shape, axis, n) in [([2usize, 3usize], 1isize, 3usize), ([3, 20], 0, 3)] {
                let len = shape[0] * shape[1];
                let x = tensor::<T>(&vec![c; len], &shape);
                let u = 1.0 / n as f64;
                let y = x.softmax(axis);
                assert_close(&y, &vec![u; len], tol);
                let l = x.log_softmax(axis);
                assert_close(&l, &vec![-(n as f64).ln(); len], tol);
                // g = 1, 2, 3 along the axis: softmax's VJP is u * (g - mean(g)) = u * (g - 2),
                // log_softmax's g - u * sum(g) = g - 2.
                let g: Vec<f64> = (0..len)
                    .map(|i| {
                        let k = if axis == 1 { i % 3 } else { i / shape[1] };
                        k as f64 + 1.0
                    })
                    .collect();
                let gt = tensor::<T>(&g, &shape);
                let sm: Vec<f64> = g.iter().map(|g| u * (g - 2.0)).collect();
                let lsm: Vec<f64> = g.iter().map(|g| g - 2.0).collect();
                assert_close(&softmax_vjp(&gt, &y, axis), &sm, tol);
                assert_close(&softmax_jvp(&y, axis, &gt), &sm, tol);
                assert_close(&log_softmax_vjp(&gt, &l, axis), &lsm, tol);
                assert_close(&log_softmax_jvp(&l, axis, &gt), &lsm, tol);
            }
        }
    }
}

#[test]
fn softmax_rules_at_large_inputs_f32() {
    softmax_rules_at_large_inputs::<f32>(&[1e4, 1e7, 1e8], 1e-6);
}

#[test]
fn softmax_rules_at_large_inputs_f64() {
    softmax_rules_at_large_inputs::<f64>(&[1e4, 1e8, 1e17], 1e-14);
}
