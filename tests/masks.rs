//! Masks inside `#[differentiable]` functions: comparisons and `eq` on indices give constant
//! masks, which cast to numbers and weight differentiated values; `maximum`/`minimum` against a
//! scalar; `arange` ranges as constants. Checked through the generated code against
//! hand-derived gradients and finite differences.

use rune_ad::prelude::*;
use rune_ad::GradFn;

fn fd_check<T: Element>(f: &impl GradFn<T>, args: &[Tensor<T>]) {
    if let Err(e) = check_grad(f, args, T::FD_EPS, T::GRAD_TOL, T::GRAD_TOL) {
        panic!("{e}");
    }
}

fn tensor<T: Element>(values: &[f64], shape: &[usize]) -> Tensor<T> {
    Tensor::from_vec(values.iter().map(|&v| T::from_f64(v)).collect(), shape)
}

/// Asserts equal shapes and values within `tol` (relative to 1 + |expected|).
#[track_caller]
fn assert_close<T: Element>(actual: &Tensor<T>, expected: &[f64], tol: f64) {
    let got: Vec<f64> = actual.to_vec().into_iter().map(|v| v.to_real()).collect();
    assert_eq!(got.len(), expected.len(), "{got:?} vs {expected:?}");
    for (g, e) in got.iter().zip(expected) {
        assert!(
            (g - e).abs() <= tol * (1.0 + e.abs()),
            "got {got:?}, expected {expected:?}"
        );
    }
}

// ---- a constant mask cast to numbers -------------------------------------------------------

#[differentiable]
fn masked_squares(x: &Tensor<f64>, #[nodiff] mask: &Tensor<bool>) -> Tensor<f64> {
    (x.square() * mask.cast::<f64>()).sum()
}

#[differentiable]
fn masked_squares_f32(x: &Tensor<f32>, #[nodiff] mask: &Tensor<bool>) -> Tensor<f32> {
    (x.square() * mask.cast::<f32>()).sum()
}

#[test]
fn a_cast_mask_weights_the_gradient() {
    let mask = Tensor::from_vec(vec![true, false, true, false], &[2, 2]);
    let x = tensor::<f64>(&[1.5, -2.0, 0.5, 3.0], &[2, 2]);
    // d/dx sum(x² m) = 2 x m
    assert_eq!(masked_squares(&x, &mask).item(), 2.5);
    assert_close(&masked_squares_grad(&x, &mask), &[3.0, 0.0, 1.0, 0.0], 0.0);
    let (_, t) = masked_squares_jvp(&x, &mask, &Tensor::ones(&[2, 2]));
    assert_eq!(t.item(), 4.0);
    fd_check(
        &grad_fn(
            |a: &[Tensor<f64>]| masked_squares(&a[0], &mask),
            |a: &[Tensor<f64>], t: &[Tensor<f64>]| masked_squares_jvp(&a[0], &mask, &t[0]).1,
            |a: &[Tensor<f64>], g: &Tensor<f64>| vec![masked_squares_vjp(&a[0], &mask, g).1],
        ),
        std::slice::from_ref(&x),
    );

    let x32 = x.cast::<f32>();
    assert_close(
        &masked_squares_f32_grad(&x32, &mask),
        &[3.0, 0.0, 1.0, 0.0],
        0.0,
    );
    fd_check(
        &grad_fn(
            |a: &[Tensor<f32>]| masked_squares_f32(&a[0], &mask),
            |a: &[Tensor<f32>], t: &[Tensor<f32>]| masked_squares_f32_jvp(&a[0], &mask, &t[0]).1,
            |a: &[Tensor<f32>], g: &Tensor<f32>| vec![masked_squares_f32_vjp(&a[0], &mask, g).1],
        ),
        &[x32],
    );
}

// ---- a mask from comparing the differentiated value ------------------------------------------

/// `sum(x · [x > y])`: the mask is a constant, so the gradient is the mask itself.
#[differentiable]
fn above(x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
    (x * x.gt(y).cast::<f64>()).sum()
}

#[differentiable]
fn above_generic<T: Element>(x: &Tensor<T>, #[nodiff] y: &Tensor<T>) -> Tensor<T> {
    (x.square() * x.gt(y).cast::<T>()).sum()
}

#[test]
fn a_comparison_of_the_differentiated_value_is_a_constant_mask() {
    let x = tensor::<f64>(&[0.5, -1.0, 2.0, 0.1, -0.3, 1.2], &[2, 3]);
    let y = tensor::<f64>(&[0.0, 1.0, 0.5], &[3]);
    // x > y: [t, f, t, t, f, t]
    assert_close(&above(&x, &y), &[0.5 + 2.0 + 0.1 + 1.2], 1e-15);
    assert_close(&above_grad(&x, &y), &[1.0, 0.0, 1.0, 1.0, 0.0, 1.0], 0.0);
    fd_check(
        &grad_fn(
            |a: &[Tensor<f64>]| above(&a[0], &y),
            |a: &[Tensor<f64>], t: &[Tensor<f64>]| above_jvp(&a[0], &y, &t[0]).1,
            |a: &[Tensor<f64>], g: &Tensor<f64>| vec![above_vjp(&a[0], &y, g).1],
        ),
        std::slice::from_ref(&x),
    );
    // d/dx sum(x² [x > y]) = 2x [x > y], in f64 and f32.
    let expected = [1.0, 0.0, 4.0, 0.2, 0.0, 2.4];
    assert_close(&above_generic_grad(&x, &y), &expected, 1e-15);
    let (x32, y32) = (x.cast::<f32>(), y.cast::<f32>());
    assert_close(&above_generic_grad(&x32, &y32), &expected, 1e-6);
    fd_check(
        &grad_fn(
            |a: &[Tensor<f32>]| above_generic(&a[0], &y32),
            |a: &[Tensor<f32>], t: &[Tensor<f32>]| above_generic_jvp(&a[0], &y32, &t[0]).1,
            |a: &[Tensor<f32>], g: &Tensor<f32>| vec![above_generic_vjp(&a[0], &y32, g).1],
        ),
        &[x32],
    );
}

// ---- `eq` on indices -----------------------------------------------------------------------

/// Half the squared logits of the rows the classifier gets right.
#[differentiable]
fn hit_energy(logits: &Tensor<f64>, #[nodiff] labels: &Tensor<i64>) -> Tensor<f64> {
    let hits = logits.argmax(-1).eq(labels).cast::<f64>();
    (logits.square().sum_axes(&[-1], false) * hits).sum() * 0.5
}

/// `x` scaled by the accuracy, written as `logits.argmax(-1).eq(&labels)` on owned labels.
#[differentiable]
fn accuracy_times(
    x: &Tensor<f64>,
    #[nodiff] logits: &Tensor<f64>,
    #[nodiff] labels: Tensor<i64>,
) -> Tensor<f64> {
    let accuracy = logits.argmax(-1).eq(&labels).cast::<f64>().mean();
    (x * accuracy).sum()
}

#[test]
fn eq_on_argmax_gives_a_mask_in_differentiated_code() {
    // Rows' argmax: 1, 0, 2; the labels match rows 0 and 2.
    let logits = tensor::<f64>(&[0.1, 2.0, -1.0, 3.0, 0.5, 0.2, -2.0, 0.0, 1.0], &[3, 3]);
    let labels = Tensor::from_vec(vec![1_i64, 2, 2], &[3]);
    assert_close(
        &hit_energy(&logits, &labels),
        &[0.5 * (0.01 + 4.0 + 1.0 + 4.0 + 1.0)],
        1e-15,
    );
    assert_close(
        &hit_energy_grad(&logits, &labels),
        &[0.1, 2.0, -1.0, 0.0, 0.0, 0.0, -2.0, 0.0, 1.0],
        1e-15,
    );
    // The accuracy is 2/3, a constant factor.
    let x = tensor::<f64>(&[1.0, 2.0], &[2]);
    assert_close(&accuracy_times(&x, &logits, labels.clone()), &[2.0], 1e-15);
    assert_close(
        &accuracy_times_grad(&x, &logits, labels),
        &[2.0 / 3.0; 2],
        1e-15,
    );
}

// ---- comparisons on the dual numbers of `f_hvp` --------------------------------------------

/// `x³` where `x > 0`, else `x²`: the twin on dual numbers compares with the same `0.0`.
#[differentiable(hvp)]
fn cube_or_square(x: &Tensor<f64>) -> Tensor<f64> {
    where_cond(&x.gt(0.0), &(x.square() * x), &x.square()).sum()
}

#[test]
fn comparisons_with_a_plain_float_read_on_dual_numbers() {
    let x = tensor::<f64>(&[2.0, -1.0, 0.5], &[3]);
    let v = tensor::<f64>(&[1.0, 1.0, 2.0], &[3]);
    // grad: 3x² or 2x; Hessian diagonal: 6x or 2.
    let (g, hv) = cube_or_square_hvp(&x, &v);
    assert_close(&g, &[12.0, -2.0, 0.75], 1e-15);
    assert_close(&hv, &[12.0, 2.0, 6.0], 1e-15);
}

/// `x³` where `x > 0` and `x²` elsewhere, written with masks cast to numbers: in the twin on dual
/// numbers that `f_hvp` runs, `cast::<f64>` casts to `Dual<f64>` (method and path forms).
#[differentiable(hvp)]
fn masked_cube_or_square(x: &Tensor<f64>) -> Tensor<f64> {
    let positive = x.gt(0.0).cast::<f64>();
    let rest = Tensor::<bool>::cast::<f64>(&x.le(0.0));
    let zeros: Tensor<f64> = Tensor::<f64>::zeros(x.shape());
    (x.square() * x * positive + x.square() * rest + zeros).sum()
}

#[test]
fn mask_casts_read_on_dual_numbers() {
    let x = tensor::<f64>(&[2.0, -1.0, 0.5, -0.3], &[2, 2]);
    let v = tensor::<f64>(&[1.0, 1.0, 2.0, -1.0], &[2, 2]);
    // grad: 3x² or 2x; Hessian diagonal: 6x or 2.
    let (g, hv) = masked_cube_or_square_hvp(&x, &v);
    assert_close(&g, &[12.0, -2.0, 0.75, -0.6], 1e-15);
    assert_close(&hv, &[12.0, 2.0, 6.0, -2.0], 1e-15);
    check_hvp(
        |a: &[Tensor<f64>]| vec![masked_cube_or_square_grad(&a[0])],
        |a: &[Tensor<f64>], v: &[Tensor<f64>]| vec![masked_cube_or_square_hvp(&a[0], &v[0]).1],
        &[x],
        1e-5,
        1e-6,
        1e-8,
    )
    .unwrap();
}

// ---- maximum and minimum against a scalar ----------------------------------------------------

/// `x` clipped to `[0, 1.5]`, squared: `2x` inside, 0 outside, and half of `2x` at an edge.
#[differentiable]
fn clipped_energy(x: &Tensor<f64>) -> Tensor<f64> {
    x.maximum(0.0).minimum(1.5).square().sum()
}

#[differentiable]
fn clipped_energy_f32(x: &Tensor<f32>) -> Tensor<f32> {
    x.maximum(0.0).minimum(1.5).square().sum()
}

/// `sum(max(x, 0))`: the gradient is 1 where `x > 0` and 1/2 at the tie `x == 0`.
#[differentiable]
fn rectified_sum(x: &Tensor<f64>) -> Tensor<f64> {
    x.maximum(0.0).sum()
}

#[test]
fn maximum_and_minimum_take_a_scalar() {
    assert_close(
        &rectified_sum_grad(&tensor(&[-1.0, 0.0, 2.0], &[3])),
        &[0.0, 0.5, 1.0],
        0.0,
    );
    let x = tensor::<f64>(&[-1.0, 0.5, 1.0, 2.0, 0.0, 1.5], &[2, 3]);
    // Clipped: [0, 0.5, 1, 1.5, 0, 1.5]; the ties at 0 and 1.5 pass half the gradient.
    assert_close(&clipped_energy(&x), &[0.25 + 1.0 + 2.25 + 2.25], 1e-15);
    let expected = [0.0, 1.0, 2.0, 0.0, 0.0, 1.5];
    assert_close(&clipped_energy_grad(&x), &expected, 1e-15);
    let (_, t) = clipped_energy_jvp(&x, &Tensor::ones(&[2, 3]));
    assert_close(&t, &[4.5], 1e-15);
    let x32 = x.cast::<f32>();
    assert_close(&clipped_energy_f32_grad(&x32), &expected, 1e-6);

    // Away from the edges, against finite differences.
    let x = tensor::<f64>(&[-1.0, 0.5, 1.2, 2.0, 0.1, 1.4], &[2, 3]);
    assert_close(
        &clipped_energy_grad(&x),
        &[0.0, 1.0, 2.4, 0.0, 0.2, 2.8],
        1e-15,
    );
    fd_check(
        &grad_fn(
            |a: &[Tensor<f64>]| clipped_energy(&a[0]),
            |a: &[Tensor<f64>], t: &[Tensor<f64>]| clipped_energy_jvp(&a[0], &t[0]).1,
            |a: &[Tensor<f64>], g: &Tensor<f64>| vec![clipped_energy_vjp(&a[0], g).1],
        ),
        std::slice::from_ref(&x),
    );
    fd_check(
        &grad_fn(
            |a: &[Tensor<f32>]| clipped_energy_f32(&a[0]),
            |a: &[Tensor<f32>], t: &[Tensor<f32>]| clipped_energy_f32_jvp(&a[0], &t[0]).1,
            |a: &[Tensor<f32>], g: &Tensor<f32>| vec![clipped_energy_f32_vjp(&a[0], g).1],
        ),
        &[x.cast::<f32>()],
    );
}

/// The same source on the dual numbers of `f_hvp`: `0.0` is the constant dual zero.
#[differentiable(hvp)]
fn rectified_cube(x: &Tensor<f64>) -> Tensor<f64> {
    (x.maximum(0.0) * x.square()).sum()
}

#[test]
fn maximum_with_a_plain_float_reads_on_dual_numbers() {
    let x = tensor::<f64>(&[2.0, -1.0, 0.5], &[3]);
    let v = tensor::<f64>(&[1.0, 1.0, 2.0], &[3]);
    // x³ where x > 0, else 0: gradient 3x² or 0, Hessian diagonal 6x or 0.
    let (g, hv) = rectified_cube_hvp(&x, &v);
    assert_close(&g, &[12.0, 0.0, 0.75], 1e-15);
    assert_close(&hv, &[12.0, 0.0, 6.0], 1e-15);
}

// ---- ranges --------------------------------------------------------------------------------

/// The sum of the first `lengths[r]` elements of each row `r` (`lengths` of shape `[rows, 1]`):
/// a sequence mask from comparing an `i64` range with the lengths.
#[differentiable]
fn prefix_sums(x: &Tensor<f64>, #[nodiff] lengths: &Tensor<i64>) -> Tensor<f64> {
    let positions = Tensor::<i64>::arange(x.shape()[1]);
    (x * positions.lt(lengths).cast::<f64>()).sum()
}

/// `x` weighted by the ramp `[0.5, 1, 1.5, ...]`.
#[differentiable]
fn ramp_weighted(x: &Tensor<f32>) -> Tensor<f32> {
    let ramp = Tensor::arange_step(0.5, 0.5 + 0.5 * x.len() as f32, 0.5);
    (x * ramp).sum()
}

#[test]
fn ranges_are_constants_in_differentiated_code() {
    let x = tensor::<f64>(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], &[2, 4]);
    let lengths = Tensor::from_vec(vec![1_i64, 3], &[2, 1]);
    assert_eq!(prefix_sums(&x, &lengths).item(), 1.0 + 5.0 + 6.0 + 7.0);
    assert_close(
        &prefix_sums_grad(&x, &lengths),
        &[1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0],
        0.0,
    );

    let y = tensor::<f32>(&[2.0, -1.0, 4.0], &[3]);
    assert_close(&ramp_weighted(&y), &[1.0 - 1.0 + 6.0], 0.0);
    assert_close(&ramp_weighted_grad(&y), &[0.5, 1.0, 1.5], 0.0);
    fd_check(
        &grad_fn(
            |a: &[Tensor<f32>]| ramp_weighted(&a[0]),
            |a: &[Tensor<f32>], t: &[Tensor<f32>]| ramp_weighted_jvp(&a[0], &t[0]).1,
            |a: &[Tensor<f32>], g: &Tensor<f32>| vec![ramp_weighted_vjp(&a[0], g).1],
        ),
        &[y],
    );
}
