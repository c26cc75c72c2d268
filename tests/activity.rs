//! Every place where a differentiated value could fall out of the activity analysis or out of
//! the generated code, each checked in every variant against values derived by hand: locals
//! assigned in nested regions, control flow on plain variables, shadowing across regions,
//! values behind tuples and references, plain variables that carry values read out of tensors.

use rune_ad::prelude::*;

fn t64(values: &[f64], shape: &[usize]) -> Tensor<f64> {
    Tensor::from_vec(values.to_vec(), shape)
}

/// The value and gradient of every reverse variant, and the JVP along `ones`, must match.
#[track_caller]
fn check_scalar(
    plain: f64,
    (value, grad): (Tensor<f64>, Tensor<f64>),
    (jvp_value, tangent): (Tensor<f64>, Tensor<f64>),
    want_value: f64,
    want_grad: &[f64],
) {
    assert_eq!(plain, want_value, "plain value");
    assert_eq!(value.item(), plain, "value_and_grad value");
    assert_eq!(jvp_value.item(), plain, "jvp value");
    let g = grad.to_vec();
    for (a, b) in g.iter().zip(want_grad) {
        assert!((a - b).abs() < 1e-12, "gradient {g:?}, want {want_grad:?}");
    }
    let sum: f64 = want_grad.iter().sum();
    assert!(
        (tangent.item() - sum).abs() < 1e-12,
        "tangent {}, want {sum}",
        tangent.item()
    );
}

/// A local assigned two regions deep (a branch inside a loop inside a branch).
#[differentiable]
fn nested_regions(x: &Tensor<f64>, #[nodiff] deep: bool) -> Tensor<f64> {
    let mut acc = x * 0.0;
    if deep {
        for i in 0..3 {
            if i % 2 == 0 {
                acc += x * (i as f64 + 1.0);
            }
        }
    }
    acc.sum()
}

#[test]
fn locals_assigned_in_nested_regions() {
    let x = t64(&[1.0, 2.0], &[2]);
    let ones = t64(&[1.0, 1.0], &[2]);
    // i = 0 and 2: acc = x (1 + 3) = 4 x.
    check_scalar(
        nested_regions(&x, true).item(),
        nested_regions_value_and_grad(&x, true),
        nested_regions_jvp(&x, true, &ones),
        12.0,
        &[4.0, 4.0],
    );
    check_scalar(
        nested_regions(&x, false).item(),
        nested_regions_value_and_grad(&x, false),
        nested_regions_jvp(&x, false, &ones),
        0.0,
        &[0.0, 0.0],
    );
}

/// Loops and branches on plain variables decide the tensor code.
#[differentiable]
fn plain_control(x: &Tensor<f64>, #[nodiff] n: usize) -> Tensor<f64> {
    let mut remaining = n;
    let mut factor = 1.0;
    let mut h = x.clone();
    while remaining > 0 {
        if remaining % 2 == 1 {
            factor *= 3.0;
        } else {
            h = &h * 2.0;
        }
        remaining -= 1;
    }
    let scale = match factor as usize {
        1 => 1.0,
        3 => 10.0,
        _ => factor,
    };
    (h * scale).sum()
}

#[test]
fn control_flow_on_plain_variables() {
    let x = t64(&[1.0, 2.0], &[2]);
    let ones = t64(&[1.0, 1.0], &[2]);
    // n = 3: remaining 3 (odd: ×3), 2 (h×2), 1 (×3): factor 9, h = 2x, scale 9 → 18 x.
    check_scalar(
        plain_control(&x, 3).item(),
        plain_control_value_and_grad(&x, 3),
        plain_control_jvp(&x, 3, &ones),
        54.0,
        &[18.0, 18.0],
    );
    // n = 1: factor 3 → scale 10, h = x.
    check_scalar(
        plain_control(&x, 1).item(),
        plain_control_value_and_grad(&x, 1),
        plain_control_jvp(&x, 1, &ones),
        30.0,
        &[10.0, 10.0],
    );
}

/// A name shadowed inside a branch or a block keeps its outer value after it.
#[differentiable]
fn shadowing(x: &Tensor<f64>, #[nodiff] flag: bool) -> Tensor<f64> {
    let h = x * 2.0;
    let c = 1.0;
    if flag {
        let h = &h * 100.0;
        let c = 50.0;
        let _ = (h, c);
    }
    let y = {
        let h = &h * 3.0;
        let c = c + 1.0;
        h * c
    };
    (y + h).sum() * c
}

#[test]
fn shadowing_across_regions() {
    let x = t64(&[1.0, 2.0], &[2]);
    let ones = t64(&[1.0, 1.0], &[2]);
    // y = 6x · 2 = 12 x, + 2x = 14 x.
    for flag in [true, false] {
        check_scalar(
            shadowing(&x, flag).item(),
            shadowing_value_and_grad(&x, flag),
            shadowing_jvp(&x, flag, &ones),
            42.0,
            &[14.0, 14.0],
        );
    }
}

/// Values behind tuples and references.
#[differentiable]
fn tuples_and_references(x: &Tensor<f64>) -> Tensor<f64> {
    let (a, b) = (x * 2.0, x.square());
    let r = &a;
    let rr = &r;
    let (p, (q, k)) = (rr.sin(), (&b, 3.0));
    (p + q * k).sum()
}

#[test]
fn values_behind_tuples_and_references() {
    let x = t64(&[0.5, -1.0], &[2]);
    let ones = t64(&[1.0, 1.0], &[2]);
    let v: f64 = x
        .to_vec()
        .iter()
        .map(|x| (2.0 * x).sin() + 3.0 * x * x)
        .sum();
    let g: Vec<f64> = x
        .to_vec()
        .iter()
        .map(|x| 2.0 * (2.0 * x).cos() + 6.0 * x)
        .collect();
    let plain = tuples_and_references(&x).item();
    assert!((plain - v).abs() < 1e-12);
    check_scalar(
        plain,
        tuples_and_references_value_and_grad(&x),
        tuples_and_references_jvp(&x, &ones),
        plain,
        &g,
    );
}

/// A plain variable assigned from `.item()` of a `stop_gradient` is a constant on purpose;
/// the same read without `stop_gradient` reaching the result is a compile error
/// (tests/ui/concretization).
#[differentiable]
fn normalised(x: &Tensor<f64>) -> Tensor<f64> {
    let mut norm = 0.0;
    for v in stop_gradient(x).to_vec() {
        norm += v * v;
    }
    let norm = norm.sqrt();
    (x / norm).sum()
}

#[test]
fn plain_variables_read_from_stopped_tensors() {
    let x = t64(&[3.0, 4.0], &[2]);
    let ones = t64(&[1.0, 1.0], &[2]);
    check_scalar(
        normalised(&x).item(),
        normalised_value_and_grad(&x),
        normalised_jvp(&x, &ones),
        7.0 / 5.0,
        &[0.2, 0.2],
    );
}

/// After an early `return`, the rest of the function (and of a branch arm, its value included)
/// sees the bindings made after the `return`.
#[differentiable]
fn after_an_early_return(
    x: &Tensor<f64>,
    #[nodiff] stop: bool,
    #[nodiff] inner: bool,
) -> Tensor<f64> {
    let mut total = x.sum() * 0.0;
    if stop {
        return x.sum() * 100.0;
    }
    total += x.sum() * 2.0;
    let y = if inner {
        let mut z = x * 3.0;
        if stop {
            return z.sum();
        }
        z *= 5.0;
        z
    } else {
        x * 7.0
    };
    total + y.sum()
}

#[test]
fn bindings_after_an_early_return() {
    let x = t64(&[1.0, 2.0], &[2]);
    let ones = t64(&[1.0, 1.0], &[2]);
    // inner: 2 Σx + 15 Σx = 17 Σx; not inner: 2 Σx + 7 Σx = 9 Σx; stop: 100 Σx.
    for (stop, inner, k) in [
        (false, true, 17.0),
        (false, false, 9.0),
        (true, true, 100.0),
    ] {
        check_scalar(
            after_an_early_return(&x, stop, inner).item(),
            after_an_early_return_value_and_grad(&x, stop, inner),
            after_an_early_return_jvp(&x, stop, inner, &ones),
            3.0 * k,
            &[k, k],
        );
    }
}

#[differentiable]
fn doubled(x: &Tensor<f64>) -> Tensor<f64> {
    x * 2.0
}

#[test]
#[should_panic(
    expected = "doubled_vjp: the cotangent of output 0 has shape [5], but `doubled` returned shape [2]"
)]
fn a_cotangent_of_the_wrong_shape_is_reported_by_name() {
    let x = t64(&[1.0, 2.0], &[2]);
    let _ = doubled_vjp(&x, &Tensor::ones(&[5]));
}
