//! `cumsum` and `cumprod` along each axis, with hand-derived gradients of `cumprod` at zeros.

use rune_runtime::rules::*;
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
