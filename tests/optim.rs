//! `optim::{Sgd, Adam}` on derived parameter structs: single steps against hand-computed
//! updates, and Adam fitting a linear regression whose gradients come from `#[differentiable]`.

use rune_ad::optim::{Adam, Sgd};
use rune_ad::prelude::*;

#[derive(Clone, Debug, Differentiable)]
struct Linear {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

fn t(data: &[f64]) -> Tensor<f64> {
    Tensor::from_vec(data.to_vec(), &[data.len()])
}

fn linear(w: &[f64], b: f64) -> Linear {
    Linear {
        w: t(w),
        b: Tensor::scalar(b),
    }
}

#[track_caller]
fn assert_close(actual: &Tensor<f64>, expected: &[f64], tol: f64) {
    let actual = actual.to_vec();
    assert_eq!(actual.len(), expected.len());
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!((a - e).abs() <= tol, "element {i}: {a} vs expected {e}");
    }
}

#[test]
fn sgd_without_momentum_steps_against_the_gradient() {
    let mut params = linear(&[1.0, -2.0], 0.5);
    let grads = linear(&[0.5, 1.0], -2.0);
    Sgd::new(0.1).step(&mut params, &grads);
    assert_close(&params.w, &[0.95, -2.1], 1e-15);
    assert_close(&params.b, &[0.7], 1e-15);
}

#[test]
fn sgd_with_momentum_matches_hand_computed_steps() {
    let mut params = linear(&[1.0, -2.0], 0.5);
    let mut opt = Sgd::new(0.1).momentum(0.9);

    // Step 1: v = g1 = ([0.5, 1], -2); p = p0 - 0.1 v = ([0.95, -2.1], 0.7).
    opt.step(&mut params, &linear(&[0.5, 1.0], -2.0));
    assert_close(&params.w, &[0.95, -2.1], 1e-15);
    assert_close(&params.b, &[0.7], 1e-15);

    // Step 2 with g2 = ([1, 0], 1): v = 0.9 v + g2 = ([1.45, 0.9], -0.8);
    // p = ([0.95 - 0.145, -2.1 - 0.09], 0.7 + 0.08).
    opt.step(&mut params, &linear(&[1.0, 0.0], 1.0));
    assert_close(&params.w, &[0.805, -2.19], 1e-14);
    assert_close(&params.b, &[0.78], 1e-14);
}

#[test]
fn adam_first_step_moves_each_parameter_by_lr_against_the_gradient_sign() {
    let start = [1.0, 1.0, 1.0, 1.0, 1.0];
    let mut params = linear(&start, 1.0);
    // Magnitudes over six decades: the bias-corrected first step is lr * g / (|g| + eps).
    let grads = linear(&[1e-3, -1.0, 1e3, -0.25, 0.0], 42.0);
    let mut opt = Adam::new(0.01);
    opt.step(&mut params, &grads);
    let moved: Vec<f64> = params.w.to_vec().iter().map(|p| p - 1.0).collect();
    let expected = [-0.01, 0.01, -0.01, 0.01, 0.0];
    for (m, e) in moved.iter().zip(expected) {
        assert!((m - e).abs() < 1e-7, "moved {m}, expected about {e}");
    }
    assert!((params.b.item() - 0.99).abs() < 1e-10);
}

#[test]
fn adam_matches_hand_computed_first_two_steps() {
    let (lr, eps) = (0.1, 1e-8);
    let mut params = linear(&[1.0, -1.0, 0.0], 0.0);
    let mut opt = Adam::new(lr);
    assert_eq!((opt.beta1, opt.beta2, opt.eps), (0.9, 0.999, 1e-8));

    // Step 1: m̂ = g, v̂ = g², so each element moves by lr * g / (|g| + eps).
    opt.step(&mut params, &linear(&[0.2, -3.0, 0.0], 0.0));
    let step1 = [
        1.0 - lr * 0.2 / (0.2 + eps),
        -1.0 + lr * 3.0 / (3.0 + eps),
        0.0,
    ];
    assert_close(&params.w, &step1, 1e-15);

    // Step 2 with g2 = [0.2, 1, 0.5]: m = 0.9 (0.1 g1) + 0.1 g2, v = 0.999 (0.001 g1²) + 0.001 g2²,
    // m̂ = m / (1 - 0.9²), v̂ = v / (1 - 0.999²).
    opt.step(&mut params, &linear(&[0.2, 1.0, 0.5], 0.0));
    let (bc1, bc2) = (1.0 - 0.81, 1.0 - 0.998_001);
    let delta = |m: f64, v: f64| lr * (m / bc1) / ((v / bc2).sqrt() + eps);
    let step2 = [
        step1[0] - delta(0.018 + 0.02, 0.999 * 4e-5 + 4e-5),
        step1[1] - delta(-0.27 + 0.1, 0.999 * 9e-3 + 1e-3),
        step1[2] - delta(0.05, 2.5e-4),
    ];
    assert_close(&params.w, &step2, 1e-12);
    // Spelled out: a constant gradient keeps moving by lr; the sign change is damped.
    assert_close(
        &params.w,
        &[0.800_000_01, -0.859_978_143_3, -0.074_413_680_25],
        1e-10,
    );
}

#[test]
fn optimizers_work_in_single_precision() {
    #[derive(Clone, Differentiable)]
    struct Params {
        w: Tensor<f32>,
    }
    let mut params = Params {
        w: Tensor::from_vec(vec![1.0, 2.0], &[2]),
    };
    let grads = Params {
        w: Tensor::from_vec(vec![1.0, -1.0], &[2]),
    };
    Sgd::new(0.5_f32).step(&mut params, &grads);
    assert_eq!(params.w.to_vec(), [0.5_f32, 2.5]);
    Adam::new(0.25_f32).step(&mut params, &grads);
    assert_eq!(params.w.to_vec(), [0.25_f32, 2.75]);
}

#[test]
#[should_panic(
    expected = "Adam::step: the gradient of `w` has shape [3], the parameter has shape [2]"
)]
fn a_gradient_of_another_shape_is_reported_with_its_path() {
    let mut params = linear(&[1.0, 2.0], 0.0);
    Adam::new(0.1).step(&mut params, &linear(&[1.0, 2.0, 3.0], 0.0));
}

#[test]
#[should_panic(expected = "are not those of the first step")]
fn an_optimizer_is_tied_to_the_parameters_of_its_first_step() {
    let mut opt = Sgd::new(0.1).momentum(0.5);
    let mut small = linear(&[1.0], 0.0);
    opt.step(&mut small, &linear(&[1.0], 0.0));
    let mut large = linear(&[1.0, 2.0], 0.0);
    opt.step(&mut large, &linear(&[1.0, 2.0], 0.0));
}

#[differentiable]
fn mse(
    w: &Tensor<f64>,
    b: &Tensor<f64>,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    let residual = x.matmul(w) + b - y;
    (&residual * &residual).mean()
}

#[test]
fn adam_fits_a_linear_regression() {
    // 32 samples of 3 features; targets exactly y = X w* + b*, so the minimum loss is zero.
    let x = Tensor::<f64>::rand_uniform(&[32, 3], -1.0, 1.0, 7);
    let (w_star, b_star) = (t(&[1.5, -2.0, 0.5]), Tensor::scalar(0.75));
    let y = x.matmul(&w_star) + &b_star;

    let mut params = linear(&[0.0, 0.0, 0.0], 0.0);
    let initial_loss = mse(&params.w, &params.b, &x, &y).item();
    let mut opt = Adam::new(0.05);
    for _ in 0..500 {
        let (gw, gb) = mse_grad(&params.w, &params.b, &x, &y);
        opt.step(&mut params, &Linear { w: gw, b: gb });
    }
    let loss = mse(&params.w, &params.b, &x, &y).item();
    assert!(initial_loss > 1.0, "initial loss {initial_loss}");
    assert!(loss < 1e-16, "loss after 500 Adam steps: {loss}");
    assert_close(&params.w, &[1.5, -2.0, 0.5], 1e-6);
    assert_close(&params.b, &[0.75], 1e-6);
}
