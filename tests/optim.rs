//! `optim` on derived parameter structs: single steps of `Sgd` (momentum, Nesterov, weight
//! decay), `Adam`, `AdamW` and `RmsProp` against updates computed by hand from PyTorch's formulas,
//! learning-rate schedules against their formulas, gradient clipping, gradient accumulation, and
//! Adam fitting a linear regression whose gradients come from `#[differentiable]`.

use rune_ad::optim::{
    clip_grad_norm, clip_grad_value, Adam, AdamW, OptimizerState, RmsProp, Schedule, Sgd,
};
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

#[test]
fn sgd_with_nesterov_and_weight_decay_matches_hand_computed_steps() {
    // PyTorch: g' = g + wd p, v = μ v + g', p = p - lr (g' + μ v); lr 0.1, μ 0.9, wd 0.01.
    let mut params = linear(&[1.0, -2.0], 0.5);
    let mut opt = Sgd::new(0.1).momentum(0.9).nesterov().weight_decay(0.01);
    // Step 1, g = ([0.5, 1], -2): g' = ([0.51, 0.98], -1.995) = v; the step is 1.9 g'.
    opt.step(&mut params, &linear(&[0.5, 1.0], -2.0));
    assert_close(&params.w, &[0.9031, -2.1862], 1e-14);
    assert_close(&params.b, &[0.87905], 1e-14);
    // Step 2, g = ([1, 0], 1): g' = ([1.009031, -0.021862], 1.0087905),
    // v = ([1.468031, 0.860138], -0.7867095), g' + 0.9 v = ([2.3302589, 0.7522622], 0.30075195).
    opt.step(&mut params, &linear(&[1.0, 0.0], 1.0));
    assert_close(&params.w, &[0.67007411, -2.26142622], 1e-13);
    assert_close(&params.b, &[0.848974805], 1e-13);
    assert_eq!(opt.steps(), 2);
}

#[test]
fn adamw_decays_the_parameters_apart_from_the_moments() {
    // PyTorch's AdamW on one element: p ← p (1 − lr wd), then Adam's step on g.
    let (lr, wd, b1, b2, eps) = (0.1_f64, 0.1, 0.9, 0.999, 1e-8);
    let mut p = Tensor::from_vec(vec![1.0_f64], &[1]);
    let mut opt = AdamW::new(lr).weight_decay(wd);
    let (mut m, mut v, mut expected) = (0.0_f64, 0.0_f64, 1.0_f64);
    for (t, g) in [0.5_f64, -0.25, 2.0].into_iter().enumerate() {
        let t = (t + 1) as i32;
        expected *= 1.0 - lr * wd;
        m = b1 * m + (1.0 - b1) * g;
        v = b2 * v + (1.0 - b2) * g * g;
        let (m_hat, v_hat) = (m / (1.0 - b1.powi(t)), v / (1.0 - b2.powi(t)));
        expected -= lr * m_hat / (v_hat.sqrt() + eps);
        opt.step(&mut p, &Tensor::from_vec(vec![g], &[1]));
        assert!(
            (p.item() - expected).abs() < 1e-15,
            "step {t}: {} against {expected}",
            p.item()
        );
    }
    // Adam with an L2 penalty instead: the first step moves by about lr against g + wd p.
    let mut q = Tensor::from_vec(vec![1.0_f64], &[1]);
    Adam::new(0.1)
        .weight_decay(1.0)
        .step(&mut q, &Tensor::from_vec(vec![-0.5], &[1]));
    // g + wd p = 0.5 > 0, so the parameter goes down by lr (to within eps).
    assert!((q.item() - 0.9).abs() < 1e-8, "{}", q.item());
}

#[test]
fn schedules_follow_their_formulas() {
    let step = Schedule::step(0.1, 3, 0.5);
    assert_eq!(
        [step.lr(0), step.lr(2), step.lr(3), step.lr(7)],
        [0.1, 0.1, 0.05, 0.025]
    );
    let exp = Schedule::exponential(2.0, 0.5);
    assert_eq!([exp.lr(0), exp.lr(1), exp.lr(3)], [2.0, 1.0, 0.25]);
    // Cosine from 1 to 0.1 over 4 steps: 0.1 + 0.9 (1 + cos(π t / 4)) / 2.
    let cos = Schedule::cosine(1.0, 0.1, 4);
    let by_hand = |t: f64| 0.1 + 0.9 * (1.0 + (std::f64::consts::PI * t / 4.0).cos()) / 2.0;
    for t in 0..6 {
        let want = by_hand((t as f64).min(4.0));
        assert!((cos.lr(t) - want).abs() < 1e-15, "cosine at {t}");
    }
    // Warm-up over 4 steps to 1: 0.25, 0.5, 0.75, 1; then the cosine to 0 over 4 more.
    let warm = Schedule::warmup_cosine(1.0, 0.0, 4, 8);
    let got: Vec<f64> = (0..9).map(|t| warm.lr(t)).collect();
    let half = (1.0 + (std::f64::consts::PI / 2.0).cos()) / 2.0;
    let want = [
        0.25,
        0.5,
        0.75,
        1.0,
        1.0,
        0.8535533905932737,
        half,
        0.14644660940672627,
        0.0,
    ];
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-15, "{got:?}");
    }
    // OneCycle to 1 over 10 steps: from 1/25 up to 1 at step 2 (0.3·10 − 1), down to
    // 1/(25·10⁴) at step 9; halfway up at step 1.
    let cycle = Schedule::one_cycle(1.0, 10);
    let want = [(0, 0.04), (1, 0.52), (2, 1.0), (9, 4e-6)];
    for (t, w) in want {
        assert!(
            (cycle.lr(t) - w).abs() < 1e-15,
            "one cycle at {t}: {}",
            cycle.lr(t)
        );
    }
}

#[test]
fn an_optimizer_reads_its_schedule_at_each_step() {
    // Gradient one on a zero parameter: the steps are the schedule's rates, 0.1, 0.05, 0.025.
    let mut p = Tensor::from_vec(vec![0.0_f64], &[1]);
    let mut opt = Sgd::new(1.0).schedule(Schedule::step(0.1, 1, 0.5));
    for _ in 0..3 {
        opt.step(&mut p, &Tensor::from_vec(vec![1.0], &[1]));
    }
    assert!((p.item() + 0.175).abs() < 1e-15, "{}", p.item());
    assert_eq!(opt.lr, 0.025);
    // A restored AdamW takes the schedule's rate at the saved step, and the same steps after.
    let schedule = Schedule::cosine(0.1, 0.0, 10);
    let mut a = AdamW::new(0.1).schedule(schedule.clone());
    let mut x = Tensor::from_vec(vec![1.0_f64, -1.0], &[2]);
    let g = Tensor::from_vec(vec![0.3, -0.7], &[2]);
    for _ in 0..3 {
        a.step(&mut x, &g);
    }
    let mut b = AdamW::new(0.5).schedule(schedule);
    let buffers = a.buffers().map(|b| b.iter().map(|s| s.to_vec()).collect());
    b.restore(&a.numbers(), buffers).unwrap();
    let mut y = x.clone();
    a.step(&mut x, &g);
    b.step(&mut y, &g);
    assert_eq!(x.to_vec(), y.to_vec());
    assert_eq!(a.lr, Schedule::cosine(0.1, 0.0, 10).lr(3));
}

#[test]
fn clipping_bounds_the_global_norm_and_each_value() {
    let mut g = linear(&[3.0, 0.0], 4.0);
    let norm = clip_grad_norm(&mut g, 2.5);
    assert_eq!(norm, 5.0);
    let scale = 2.5 / (5.0 + 1e-6);
    assert_close(&g.w, &[3.0 * scale, 0.0], 1e-15);
    assert_close(&g.b, &[4.0 * scale], 1e-15);
    // Below the bound nothing changes.
    let mut small = linear(&[0.3, 0.4], 0.0);
    assert!((clip_grad_norm(&mut small, 1.0) - 0.5).abs() < 1e-15);
    assert_close(&small.w, &[0.3, 0.4], 0.0);
    let mut v = linear(&[3.0, -0.2], -4.0);
    clip_grad_value(&mut v, 1.0);
    assert_close(&v.w, &[1.0, -0.2], 0.0);
    assert_close(&v.b, &[-1.0], 0.0);
}

#[test]
fn rmsprop_centred_with_momentum_and_weight_decay_matches_pytorch_s_update() {
    // torch.optim.RMSprop(lr=0.01, alpha=0.9, eps=1e-8, weight_decay=0.1, momentum=0.5,
    // centered=True) on one element, written out: g += wd p; s = α s + (1 − α) g²;
    // ḡ = α ḡ + (1 − α) g; b = μ b + g / (√(s − ḡ²) + eps); p −= lr b.
    let (lr, alpha, eps, wd, mu) = (0.01_f64, 0.9, 1e-8, 0.1, 0.5);
    let mut p = Tensor::from_vec(vec![1.5_f64], &[1]);
    let mut opt = RmsProp::new(lr)
        .alpha(alpha)
        .weight_decay(wd)
        .momentum(mu)
        .centered();
    let (mut s, mut m, mut b, mut expected) = (0.0_f64, 0.0_f64, 0.0_f64, 1.5_f64);
    for raw in [0.8_f64, -0.3, 1.1] {
        let g = raw + wd * expected;
        s = alpha * s + (1.0 - alpha) * g * g;
        m = alpha * m + (1.0 - alpha) * g;
        b = mu * b + g / ((s - m * m).sqrt() + eps);
        expected -= lr * b;
        opt.step(&mut p, &Tensor::from_vec(vec![raw], &[1]));
        assert!(
            (p.item() - expected).abs() < 1e-14,
            "{} against {expected}",
            p.item()
        );
    }
    // Its state restores into a fresh optimizer that then takes the same step.
    let mut q = RmsProp::new(0.5);
    let buffers = opt
        .buffers()
        .map(|b| b.iter().map(|s| s.to_vec()).collect());
    q.restore(&opt.numbers(), buffers).unwrap();
    let (mut a, mut c) = (p.clone(), p.clone());
    let g = Tensor::from_vec(vec![0.4], &[1]);
    opt.step(&mut a, &g);
    q.step(&mut c, &g);
    assert_eq!(a.to_vec(), c.to_vec());
}

/// Gradient accumulation: the mean of the gradients of four micro-batches of eight, summed with
/// `axpy` and scaled, is the gradient of the whole batch of 32, so AdamW's steps from the two
/// agree to rounding; a step from one micro-batch's gradient alone does not.
#[test]
fn accumulated_micro_batch_gradients_step_as_the_whole_batch() {
    let x = Tensor::<f64>::rand_uniform(&[32, 3], -1.0, 1.0, 8);
    let y = Tensor::<f64>::rand_uniform(&[32], -1.0, 1.0, 9);
    let grad = |p: &Linear, rows: std::ops::Range<usize>| {
        let rows: Vec<usize> = rows.collect();
        let (gw, gb) = mse_grad(
            &p.w,
            &p.b,
            &x.index_select(0, &rows),
            &y.index_select(0, &rows),
        );
        Linear { w: gw, b: gb }
    };
    let (mut whole, mut accumulated, mut single) = (
        linear(&[0.3, -0.2, 0.1], 0.05),
        linear(&[0.3, -0.2, 0.1], 0.05),
        linear(&[0.3, -0.2, 0.1], 0.05),
    );
    let (mut a, mut b, mut c) = (AdamW::new(0.1), AdamW::new(0.1), AdamW::new(0.1));
    for _ in 0..5 {
        let g = grad(&whole, 0..32);
        a.step(&mut whole, &g);
        let mut total = accumulated.zeros_like();
        for k in 0..4 {
            total.axpy(1.0, &grad(&accumulated, 8 * k..8 * k + 8));
        }
        b.step(&mut accumulated, &total.scale(0.25));
        let g = grad(&single, 0..8);
        c.step(&mut single, &g);
    }
    assert_close(&accumulated.w, &whole.w.to_vec(), 1e-12);
    assert_close(&accumulated.b, &whole.b.to_vec(), 1e-12);
    let apart = (single.w.to_vec()[0] - whole.w.to_vec()[0]).abs();
    assert!(
        apart > 1e-4,
        "one micro-batch alone moved like the whole batch: {apart}"
    );
}
