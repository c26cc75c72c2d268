//! `cumsum`, `cumprod` and `logcumsumexp` along each axis, with hand-derived gradients of
//! `cumprod` at zeros and of `logcumsumexp` at infinities and large magnitudes.

use rune_runtime::__private::rules::*;
use rune_runtime::{Element, Tensor};

use crate::common::{assert_close, tensor, uniform, Case};

/// `(label, shape, axis)`
const AXIS_CASES: &[(&str, &[usize], isize)] = &[
    ("1-d", &[5], 0),
    ("rows", &[3, 4], -1),
    ("columns", &[3, 4], 0),
    ("middle axis", &[2, 3, 4], 1),
    // Wide planes across a strided axis take the plane-by-plane kernels.
    ("columns of a wide tensor", &[3, 20], 0),
    ("middle axis of a wide tensor", &[2, 3, 16], -2),
    ("negative middle axis", &[2, 3, 2], -2),
];

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    for (i, &(label, shape, axis)) in AXIS_CASES.iter().enumerate() {
        cases.push(Case::new(
            "cumsum",
            label,
            vec![uniform::<T>(shape, -2.0, 2.0, 500 + i as u64)],
            move |x| x[0].cumsum(axis),
            move |_, t| cumsum_jvp(axis, &t[0]),
            move |_, g| vec![cumsum_vjp(g, axis)],
        ));
        cases.push(Case::new(
            "cumprod",
            label,
            vec![uniform::<T>(shape, -1.5, 1.5, 520 + i as u64)],
            move |x| x[0].cumprod(axis),
            move |x, t| cumprod_jvp(&x[0], axis, &t[0]),
            move |x, g| vec![cumprod_vjp(g, &x[0], &x[0].cumprod(axis), axis)],
        ));
        cases.push(Case::new(
            "logcumsumexp",
            label,
            vec![uniform::<T>(shape, -3.0, 3.0, 540 + i as u64)],
            move |x| x[0].logcumsumexp(axis),
            move |x, t| logcumsumexp_jvp(&x[0], axis, &t[0]),
            move |x, g| vec![logcumsumexp_vjp(g, &x[0], axis)],
        ));
    }
    // Far beyond `exp`'s range (e^±100 overflows f32), with the maximum moving up and down.
    for (label, offset) in [("large", 100.0), ("large negative", -100.0)] {
        cases.push(Case::new(
            "logcumsumexp",
            label,
            vec![tensor(
                &[
                    offset,
                    offset - 3.0,
                    offset + 1.0,
                    offset + 0.5,
                    offset + 4.0,
                    offset - 1.0,
                ],
                &[2, 3],
            )],
            move |x| x[0].logcumsumexp(-1),
            move |x, t| logcumsumexp_jvp(&x[0], -1, &t[0]),
            move |x, g| vec![logcumsumexp_vjp(g, &x[0], -1)],
        ));
    }
    // `cumprod` is polynomial in each element, so finite differences hold at zeros too.
    for (label, axis) in [("zeros, rows", 1), ("zeros, columns", 0)] {
        cases.push(Case::new(
            "cumprod",
            label,
            vec![tensor(
                &[2.0, 0.0, 1.5, -1.0, 0.0, 0.0, 0.5, 2.0, 0.0, 1.0, 3.0, 0.0],
                &[3, 4],
            )],
            move |x| x[0].cumprod(axis),
            move |x, t| cumprod_jvp(&x[0], axis, &t[0]),
            move |x, g| vec![cumprod_vjp(g, &x[0], &x[0].cumprod(axis), axis)],
        ));
    }
    cases
}

fn ones(shape: &[usize]) -> Tensor<f64> {
    Tensor::ones(shape)
}

/// The gradient of `sum(cumprod(x, axis))`.
fn grad_sum_cumprod(x: &Tensor<f64>, axis: isize) -> Tensor<f64> {
    cumprod_vjp(&ones(x.shape()), x, &x.cumprod(axis), axis)
}

#[test]
fn cumsum_values_and_vjp() {
    let x = tensor::<f64>(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    assert_close(&x.cumsum(1), &[1.0, 3.0, 6.0, 4.0, 9.0, 15.0], 0.0);
    assert_close(&x.cumsum(-2), &[1.0, 2.0, 3.0, 5.0, 7.0, 9.0], 0.0);
    // Reverse running sums: row [1, 2, 3] gives [6, 5, 3].
    assert_close(&cumsum_vjp(&x, -1), &[6.0, 5.0, 3.0, 15.0, 11.0, 6.0], 0.0);
    assert_close(&cumsum_vjp(&x, 0), &[5.0, 7.0, 9.0, 4.0, 5.0, 6.0], 0.0);
    assert_close(&cumsum_jvp(0, &x), &[1.0, 2.0, 3.0, 5.0, 7.0, 9.0], 0.0);
}

#[test]
fn cumprod_values() {
    let x = tensor::<f64>(&[2.0, 3.0, 0.0, 0.0, 2.0, 3.0], &[2, 3]);
    assert_close(&x.cumprod(1), &[2.0, 6.0, 0.0, 0.0, 0.0, 0.0], 0.0);
    assert_close(&x.cumprod(0), &[2.0, 3.0, 0.0, 0.0, 6.0, 0.0], 0.0);
}

#[test]
fn cumprod_vjp_is_exact_at_zeros() {
    // sum(cumprod([a, b, c])) = a + ab + abc: gradient [1 + b + bc, a + ac, ab].
    let cases: &[(&[f64], &[f64])] = &[
        (&[2.0, 3.0, 0.0], &[4.0, 2.0, 6.0]),
        (&[0.0, 2.0, 3.0], &[9.0, 0.0, 0.0]),
        (&[2.0, 0.0, 0.0], &[1.0, 2.0, 0.0]),
        (&[0.0, 0.0, 0.0], &[1.0, 0.0, 0.0]),
        (&[2.0, 3.0, 4.0], &[16.0, 10.0, 6.0]),
    ];
    for &(x, expected) in cases {
        let x = tensor::<f64>(x, &[3]);
        assert_close(&grad_sum_cumprod(&x, 0), expected, 0.0);
    }
    // Cotangent [1, 10, 100] at [2, 3, 0]: [1 + 10*3 + 0, 10*2 + 0, 100*2*3].
    let x = tensor::<f64>(&[2.0, 3.0, 0.0], &[3]);
    let g = tensor::<f64>(&[1.0, 10.0, 100.0], &[3]);
    assert_close(
        &cumprod_vjp(&g, &x, &x.cumprod(0), 0),
        &[31.0, 20.0, 600.0],
        0.0,
    );
}

#[test]
fn cumprod_vjp_is_exact_at_zeros_in_2d() {
    let x = tensor::<f64>(&[2.0, 3.0, 0.0, 0.0, 2.0, 3.0], &[2, 3]);
    let rows = [4.0, 2.0, 6.0, 9.0, 0.0, 0.0];
    assert_close(&grad_sum_cumprod(&x, 1), &rows, 0.0);
    assert_close(&grad_sum_cumprod(&x, -1), &rows, 0.0);
    // Columns [a, b] give a + ab: gradient [1 + b, a]. Columns are [2, 0], [3, 2], [0, 3].
    let cols = [1.0, 3.0, 4.0, 2.0, 3.0, 0.0];
    assert_close(&grad_sum_cumprod(&x, 0), &cols, 0.0);
    assert_close(&grad_sum_cumprod(&x, -2), &cols, 0.0);
}

#[test]
fn cumprod_jvp_is_exact_at_zeros() {
    // d(a, ab, abc) along (1, 1, 1) = (1, a + b, bc + ac + ab).
    let dx = ones(&[3]);
    let x = tensor::<f64>(&[2.0, 3.0, 0.0], &[3]);
    assert_close(&cumprod_jvp(&x, 0, &dx), &[1.0, 5.0, 6.0], 0.0);
    let x = tensor::<f64>(&[0.0, 2.0, 3.0], &[3]);
    assert_close(&cumprod_jvp(&x, 0, &dx), &[1.0, 2.0, 6.0], 0.0);
    let x = tensor::<f64>(&[2.0, 0.0, 0.0], &[3]);
    assert_close(&cumprod_jvp(&x, 0, &dx), &[1.0, 2.0, 0.0], 0.0);
    // Columns [2, 0] and [0, 5] along (1, 1): (1, a + b).
    let x = tensor::<f64>(&[2.0, 0.0, 0.0, 5.0], &[2, 2]);
    assert_close(
        &cumprod_jvp(&x, 0, &ones(&[2, 2])),
        &[1.0, 1.0, 2.0, 5.0],
        0.0,
    );
}

/// <JVP(v), w> = <v, VJP(w)> with zeros in the input, along each axis of a 3-d tensor.
#[test]
fn cumprod_rules_are_adjoint_at_zeros() {
    let x = uniform::<f64>(&[3, 4, 5], -2.0, 2.0, 60).map(|&v| if v.abs() < 0.6 { 0.0 } else { v });
    assert!(x.to_vec().iter().filter(|&&v| v == 0.0).count() > 5);
    let v = uniform::<f64>(&[3, 4, 5], -1.0, 1.0, 61);
    let w = uniform::<f64>(&[3, 4, 5], -1.0, 1.0, 62);
    let dot = |a: &Tensor<f64>, b: &Tensor<f64>| (a * b).sum().item();
    for axis in [0, 1, 2, -1] {
        let y = x.cumprod(axis);
        let lhs = dot(&cumprod_jvp(&x, axis, &v), &w);
        let rhs = dot(&v, &cumprod_vjp(&w, &x, &y, axis));
        assert!(
            (lhs - rhs).abs() <= 1e-12 * (1.0 + lhs.abs()),
            "axis {axis}: {lhs} vs {rhs}"
        );
    }
}

#[test]
fn zero_cotangents_stay_zero() {
    let x = tensor::<f64>(&[f64::INFINITY, 2.0], &[2]);
    let y = x.cumprod(0);
    assert_close(
        &cumprod_vjp(&tensor(&[0.0, 0.0], &[2]), &x, &y, 0),
        &[0.0, 0.0],
        0.0,
    );
    assert_close(
        &cumprod_jvp(&x, 0, &tensor(&[0.0, 0.0], &[2])),
        &[0.0, 0.0],
        0.0,
    );
}

#[test]
fn bad_axis_names_the_op_and_the_shape() {
    let x = Tensor::<f64>::zeros(&[2, 3]);
    let panic = std::panic::catch_unwind(|| x.cumsum(2)).unwrap_err();
    let msg = panic.downcast_ref::<String>().unwrap();
    assert!(
        msg.starts_with("cumsum:") && msg.contains("[2, 3]"),
        "{msg}"
    );
    let err = x.try_cumprod(-3).unwrap_err();
    assert_eq!(err.op(), "cumprod");
    assert!(err.to_string().contains("[2, 3]"), "{err}");
    assert!(Tensor::<f64>::scalar(1.0).try_cumsum(0).is_err());
}

/// The same hand-derived lines as columns of a wide tensor (the plane-by-plane kernels).
#[test]
fn cumprod_rules_are_exact_at_zeros_across_planes() {
    // Per line: x, the gradient of sum(cumprod), and the JVP along ones.
    let lines: [[[f64; 3]; 3]; 3] = [
        [[2.0, 3.0, 0.0], [4.0, 2.0, 6.0], [1.0, 5.0, 6.0]],
        [[0.0, 2.0, 3.0], [9.0, 0.0, 0.0], [1.0, 2.0, 6.0]],
        [[2.0, 0.0, 0.0], [1.0, 2.0, 0.0], [1.0, 2.0, 0.0]],
    ];
    let cols = 18;
    // Column `c` holds line `c % 3`.
    let column = |which: usize| -> Vec<f64> {
        (0..3 * cols)
            .map(|k| lines[(k % cols) % 3][which][k / cols])
            .collect()
    };
    let x = tensor::<f64>(&column(0), &[3, cols]);
    assert_close(&grad_sum_cumprod(&x, 0), &column(1), 0.0);
    assert_close(&cumprod_jvp(&x, 0, &ones(&[3, cols])), &column(2), 0.0);
}

fn ln(v: f64) -> f64 {
    v.ln()
}

#[test]
fn logcumsumexp_values() {
    let x = tensor::<f64>(&[0.0, 0.0, 0.0, 1.0, 2.0, 3.0], &[2, 3]);
    let e = std::f64::consts::E;
    assert_close(
        &x.logcumsumexp(1),
        &[
            0.0,
            ln(2.0),
            ln(3.0),
            1.0,
            ln(e + e * e),
            ln(e + e * e + e * e * e),
        ],
        1e-15,
    );
    assert_close(
        &x.logcumsumexp(0),
        &[
            0.0,
            0.0,
            0.0,
            ln(1.0 + e),
            ln(1.0 + e * e),
            ln(1.0 + e * e * e),
        ],
        1e-15,
    );
    // The derivative of `ln(e^a + e^b)` is the softmax of `(a, b)`.
    let x = tensor::<f64>(&[0.0, 1.0], &[2]);
    let w = [1.0 / (1.0 + e), e / (1.0 + e)];
    assert_close(
        &logcumsumexp_vjp(&tensor(&[0.0, 1.0], &[2]), &x, 0),
        &w,
        1e-15,
    );
    assert_close(
        &logcumsumexp_jvp(&x, 0, &tensor(&[1.0, 0.0], &[2])),
        &[1.0, w[0]],
        1e-15,
    );
}

/// No overflow or underflow at any magnitude: each output is its prefix's maximum plus the
/// log of a sum between 1 and the prefix length.
#[test]
fn logcumsumexp_is_stable_at_large_magnitudes() {
    let x = tensor::<f64>(&[1000.0, 1000.0, -1000.0, 1e300, -1e300], &[5]);
    let y = x.logcumsumexp(0).to_vec();
    assert_eq!(y[0], 1000.0);
    assert!((y[1] - (1000.0 + ln(2.0))).abs() < 1e-12);
    assert_eq!(y[2], y[1]);
    assert_eq!(y[3..], [1e300, 1e300]);
    let x = tensor::<f64>(&[-1000.0, -1000.0, -1001.0], &[3]);
    let e = std::f64::consts::E;
    assert_close(
        &x.logcumsumexp(0),
        &[-1000.0, -1000.0 + ln(2.0), -1000.0 + ln(2.0 + 1.0 / e)],
        1e-15,
    );
    // The gradient's weights come from the running maximum, not from the rounded output: in
    // f32 at 1e7 (an ulp of 1) `exp(x - y)` would be off by a factor `e^(±0.5)`.
    let x = tensor::<f32>(&[1e7, 1e7, 1e7 + 2.0], &[3]);
    let g = tensor::<f32>(&[1.0, 1.0, 0.0], &[3]);
    assert_close(&logcumsumexp_vjp(&g, &x, 0), &[1.5, 0.5, 0.0], 1e-7);
    let d = tensor::<f32>(&[1.0, 0.0, 0.0], &[3]);
    let w = 1.0 / (2.0 + (2.0f64).exp());
    assert_close(&logcumsumexp_jvp(&x, 0, &d), &[1.0, 0.5, w], 1e-6);
}

/// `-inf` elements add nothing; outputs are `-inf` until the first finite element, and there
/// the derivative is shared evenly among the leading `-inf` (the limit along equal values;
/// `y[0] = x[0]` has derivative 1). `+inf` makes every later output `+inf`, its derivative
/// shared among the `+inf` elements. No NaN appears where no input is NaN.
#[test]
fn logcumsumexp_at_infinities() {
    let inf = f64::INFINITY;
    let e = std::f64::consts::E;
    let x = tensor::<f64>(&[-inf, -inf, 0.0, -inf, 1.0], &[5]);
    let y = x.logcumsumexp(0);
    assert_eq!(y.to_vec()[..4], [-inf, -inf, 0.0, 0.0]);
    assert_close(&y.shrink(&[(4, 5)]), &[ln(1.0 + e)], 1e-15);
    // With g = 1: x[0] gets 1 from y[0] and 1/2 from y[1]; x[2] gets 1 from y[2] and y[3] and
    // 1/(1 + e) from y[4]; x[4] gets e/(1 + e); x[3] nothing.
    let ones = Tensor::<f64>::ones(&[5]);
    assert_close(
        &logcumsumexp_vjp(&ones, &x, 0),
        &[1.5, 0.5, 2.0 + 1.0 / (1.0 + e), 0.0, e / (1.0 + e)],
        1e-15,
    );
    // Each output's weights sum to one.
    assert_close(&logcumsumexp_jvp(&x, 0, &ones), &[1.0; 5], 1e-15);
    let first = tensor::<f64>(&[1.0, 0.0, 0.0, 0.0, 0.0], &[5]);
    assert_close(
        &logcumsumexp_jvp(&x, 0, &first),
        &[1.0, 0.5, 0.0, 0.0, 0.0],
        0.0,
    );
    // All `-inf`.
    let x = tensor::<f64>(&[-inf, -inf], &[2]);
    assert_eq!(x.logcumsumexp(0).to_vec(), vec![-inf, -inf]);
    assert_close(
        &logcumsumexp_vjp(&ones.shrink(&[(0, 2)]), &x, 0),
        &[1.5, 0.5],
        0.0,
    );

    let x = tensor::<f64>(&[1.0, inf, 2.0, inf], &[4]);
    assert_eq!(x.logcumsumexp(0).to_vec(), vec![1.0, inf, inf, inf]);
    assert_close(
        &logcumsumexp_vjp(&Tensor::ones(&[4]), &x, 0),
        &[1.0, 2.5, 0.0, 0.5],
        0.0,
    );

    let x = tensor::<f64>(&[1.0, f64::NAN, 2.0], &[3]);
    let y = x.logcumsumexp(0).to_vec();
    assert_eq!(y[0], 1.0);
    assert!(y[1].is_nan() && y[2].is_nan());
}

#[test]
fn logcumsumexp_zero_cotangents_stay_zero() {
    let x = tensor::<f64>(&[f64::NAN, 2.0, 1.0], &[3]);
    let zeros = Tensor::<f64>::zeros(&[3]);
    assert_eq!(logcumsumexp_vjp(&zeros, &x, 0), zeros);
    assert_eq!(logcumsumexp_jvp(&x, 0, &zeros), zeros);
}

#[test]
fn logcumsumexp_bad_axis_names_the_op_and_the_shape() {
    let x = Tensor::<f64>::zeros(&[2, 3]);
    let err = x.try_logcumsumexp(2).unwrap_err();
    assert_eq!(err.op(), "logcumsumexp");
    assert!(err.to_string().contains("[2, 3]"), "{err}");
}
