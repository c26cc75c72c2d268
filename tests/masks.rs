//! Masks inside `#[differentiable]` functions: comparisons give constant masks, which cast to numbers and weight differentiated values; checked through the generated
//! code against hand-derived gradients and finite differences.

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
