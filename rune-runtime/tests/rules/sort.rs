//! `sort` along each axis on well-separated values (no finite-difference step swaps two), with
//! hand-derived permutations of the cotangent, ties, NaN, and `argsort`.

use rune_runtime::__private::rules::*;
use rune_runtime::{Element, Tensor};

use crate::common::{assert_close, panic_message, tensor, Case};
use crate::reduce::distinct;

/// `(label, shape, axis)`
const AXIS_CASES: &[(&str, &[usize], isize)] = &[
    ("1-d", &[6], 0),
    ("rows", &[3, 5], -1),
    ("columns", &[4, 3], 0),
    ("middle axis", &[2, 4, 3], 1),
    ("columns of a wide tensor", &[3, 20], 0),
];

pub fn cases<T: Element>() -> Vec<Case<T>> {
    AXIS_CASES
        .iter()
        .enumerate()
        .map(|(i, &(label, shape, axis))| {
            Case::new(
                "sort",
                label,
                vec![distinct::<T>(shape, 800 + i as u64)],
                move |x| x[0].sort(axis),
                move |x, t| sort_jvp(&x[0], axis, &t[0]),
                move |x, g| vec![sort_vjp(g, &x[0], axis)],
            )
        })
        .collect()
}

#[test]
fn sorts_each_lane() {
    let x = tensor::<f64>(&[3.0, -1.0, 2.0, 0.5, 4.0, -2.0], &[2, 3]);
    assert_close(&x.sort(1), &[-1.0, 2.0, 3.0, -2.0, 0.5, 4.0], 0.0);
    assert_close(&x.sort(-2), &[0.5, -1.0, -2.0, 3.0, 4.0, 2.0], 0.0);
    assert_eq!(x.argsort(1).to_vec(), vec![1, 2, 0, 2, 0, 1]);
    assert_eq!(x.argsort(0).to_vec(), vec![1, 0, 1, 0, 1, 0]);
    // `gather` with `argsort` is `sort`.
    for axis in [0, 1] {
        assert_eq!(x.gather(axis, &x.argsort(axis)), x.sort(axis));
    }
}

#[test]
fn ties_keep_their_order_and_nan_sorts_last() {
    let x = tensor::<f64>(&[2.0, f64::NAN, 1.0, 2.0, -0.0, 0.0, 1.0], &[7]);
    assert_eq!(x.argsort(0).to_vec(), vec![4, 5, 2, 6, 0, 3, 1]);
    let y = x.sort(0).to_vec();
    assert_eq!(y[..6], [-0.0, 0.0, 1.0, 1.0, 2.0, 2.0]);
    assert!(y[6].is_nan());
    // The cotangent follows the stable permutation: position k of the output goes back to
    // `argsort[k]`.
    let g = tensor::<f64>(&[10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0], &[7]);
    assert_close(
        &sort_vjp(&g, &x, 0),
        &[50.0, 70.0, 30.0, 60.0, 10.0, 20.0, 40.0],
        0.0,
    );
}

#[test]
fn rules_move_values_with_their_elements() {
    // Columns [3, 0.5], [-1, 4], [2, -2]: the second and third swap.
    let x = tensor::<f64>(&[3.0, -1.0, 2.0, 0.5, 4.0, -2.0], &[2, 3]);
    let v = tensor::<f64>(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    assert_close(&sort_jvp(&x, 0, &v), &[4.0, 2.0, 6.0, 1.0, 5.0, 3.0], 0.0);
    assert_close(&sort_vjp(&v, &x, 0), &[4.0, 2.0, 6.0, 1.0, 5.0, 3.0], 0.0);
    // Rows: order [1, 2, 0] and [2, 0, 1]; the VJP inverts it.
    assert_close(&sort_jvp(&x, 1, &v), &[2.0, 3.0, 1.0, 6.0, 4.0, 5.0], 0.0);
    assert_close(&sort_vjp(&v, &x, 1), &[3.0, 1.0, 2.0, 5.0, 6.0, 4.0], 0.0);
}

#[test]
fn bad_axis_names_the_op_and_the_shape() {
    let x = Tensor::<f64>::zeros(&[2, 3]);
    let err = x.try_sort(2).unwrap_err();
    assert_eq!(err.op(), "sort");
    assert!(err.to_string().contains("[2, 3]"), "{err}");
    assert_eq!(x.try_argsort(-3).unwrap_err().op(), "argsort");
    let msg = panic_message(|| x.sort(5));
    assert!(msg.starts_with("sort:"), "{msg}");
    let msg = panic_message(|| sort_vjp(&Tensor::zeros(&[3, 2]), &x, 0));
    assert!(
        msg.starts_with("sort_vjp:") && msg.contains("[3, 2]"),
        "{msg}"
    );
}
