//! The special and inverse functions end to end, as a statistician would use them: a gamma GLM
//! fitted by maximum likelihood (`lgamma`), a probit regression (`erfc`), a logistic one
//! (`log_sigmoid`), a Gaussian mixture (`logaddexp`, `xlogy`), polar coordinates (`atan2`,
//! `hypot`), and one generic function chaining every new elementwise op, checked fused
//! against its `fuse = false` twin in f32, f64 and Hessian-vector products (dual numbers).

mod support;

use rune_ad::prelude::*;
use support::check_variants;

/// A gamma GLM with a log link: `y ~ Gamma(α, α/μ)` with mean `μ = exp(x·w + b)` and shape
/// `α = exp(log_shape)`.
#[derive(Clone, Differentiable)]
struct GammaGlm {
    w: Tensor<f64>,
    b: Tensor<f64>,
    log_shape: Tensor<f64>,
}

impl GammaGlm {
    /// The mean negative log-likelihood of positive targets `y`.
    #[differentiable]
    fn nll(&self, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
        let mu = (x.matmul(&self.w) + &self.b).exp();
        let alpha = self.log_shape.exp();
        let rate = &alpha / &mu;
        let ll = &alpha * rate.ln() + (&alpha - 1.0) * y.ln() - &rate * y - alpha.lgamma();
        -ll.mean()
    }
}

/// Probit regression: `P(y = 1) = Φ(x·w) = erfc(-x·w/√2)/2`, its log written with `erfc` so
/// that it stays finite far in the tails.
#[differentiable]
fn probit_nll(
    w: &Tensor<f64>,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    let z = x.matmul(w) * std::f64::consts::FRAC_1_SQRT_2;
    let log_p = (-&z).erfc().ln() - std::f64::consts::LN_2;
    let log_q = z.erfc().ln() - std::f64::consts::LN_2;
    -(y * &log_p + (1.0 - y) * &log_q).mean()
}

/// Logistic regression with `log_sigmoid`: `-[y ln σ(z) + (1 - y) ln σ(-z)]`.
#[differentiable]
fn logistic_nll(
    w: &Tensor<f64>,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    let z = x.matmul(w);
    -(y * z.log_sigmoid() + (1.0 - y) * (-&z).log_sigmoid()).mean()
}

fn design(n: usize, seed: u64) -> Tensor<f64> {
    Tensor::rand_normal(&[n, 3], 0.0, 1.0, seed)
}

#[test]
fn a_gamma_glm_has_the_gradient_of_its_likelihood() {
    let x = design(12, 1);
    let y = Tensor::rand_uniform(&[12], 0.2, 3.0, 2);
    let model = GammaGlm {
        w: Tensor::from_vec(vec![0.3, -0.2, 0.1], &[3]),
        b: Tensor::from_vec(vec![0.4], &[1]),
        log_shape: Tensor::from_vec(vec![0.7], &[1]),
    };
    check_variants!(GammaGlm::nll, GammaGlm::nll_value_and_grad, GammaGlm::nll_grad, GammaGlm::nll_vjp, GammaGlm::nll_jvp, GammaGlm::nll_pullback; [model]; (&model, &x, &y));

    // The shape's score by hand: d/dα of the mean log-likelihood is
    // mean(ln(α/μ) + 1 + ln y - y/μ) - ψ(α), times dα/d(log_shape) = α.
    let (_, grad) = model.nll_value_and_grad(&x, &y);
    let alpha = 0.7f64.exp();
    let mu = (x.matmul(&model.w) + &model.b).exp();
    let score = ((&mu.recip() * alpha).ln() + 1.0 + y.ln() - &y / &mu)
        .mean()
        .item()
        - Tensor::scalar(alpha).digamma().item();
    let got = grad.log_shape.item();
    assert!(
        (got + alpha * score).abs() < 1e-12,
        "{got} vs {}",
        -alpha * score
    );
}

#[test]
fn probit_and_logistic_regressions_have_the_gradients_of_their_likelihoods() {
    let x = design(10, 3);
    let y = Tensor::from_vec((0..10).map(|i| f64::from(i % 3 == 0)).collect(), &[10]);
    let w = Tensor::from_vec(vec![0.5, -0.8, 0.3], &[3]);
    check_variants!(probit_nll, probit_nll_value_and_grad, probit_nll_grad, probit_nll_vjp, probit_nll_jvp, probit_nll_pullback; [w]; (&w, &x, &y));
    check_variants!(logistic_nll, logistic_nll_value_and_grad, logistic_nll_grad, logistic_nll_vjp, logistic_nll_jvp, logistic_nll_pullback; [w]; (&w, &x, &y));
    // The logistic score by hand: ∇ = -xᵀ(y - σ(xw)) / n.
    let g = logistic_nll_grad(&w, &x, &y);
    let residual = &y - x.matmul(&w).sigmoid();
    let want = -(x.t().matmul(&residual)) / 10.0;
    for (a, b) in g.to_vec().iter().zip(want.to_vec()) {
        assert!((a - b).abs() < 1e-14, "{a} vs {b}");
    }
    // Far in the tails the probit likelihood stays finite: Φ(-20) = (1 + erf(-20/√2))/2 is 0 in
    // f64, but erfc gives -ln Φ(-20) = 203.917155371097 (Python's math.erfc), and the gradient
    // is finite (about -20, the inverse Mills ratio times x).
    let far = Tensor::from_vec(vec![20.0, 0.0, 0.0], &[1, 3]);
    let w_far = Tensor::from_vec(vec![-1.0, 0.0, 0.0], &[3]);
    let (value, g) = probit_nll_value_and_grad(&w_far, &far, &Tensor::ones(&[1]));
    assert!(
        (value.item() - 203.917_155_371_097).abs() < 1e-9,
        "{value:?}"
    );
    assert!(g.to_vec().iter().all(|v| v.is_finite()), "{g:?}");
}

/// A two-component Gaussian mixture (unit variances) scored by its mean negative
/// log-likelihood, the log of the sum of the two weighted densities written with `logaddexp`,
/// plus the weights' entropy written with `xlogy` and `xlog1py`.
#[differentiable]
fn mixture_nll(means: &Tensor<f64>, logit: &Tensor<f64>, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let lp0 = logit.log_sigmoid() - (x - means.shrink(&[(0, 1)])).powi(2) * 0.5;
    let lp1 = (-logit).log_sigmoid() - (x - means.shrink(&[(1, 2)])).powi(2) * 0.5;
    let p = logit.sigmoid();
    let neg_entropy = p.xlogy(&p) + (1.0 - &p).xlog1py(&(-&p));
    (neg_entropy - lp0.logaddexp(&lp1).mean()).sum()
}

/// Points in polar coordinates: `Σ r² sin θ` with `r = hypot(x, y)`, `θ = atan2(y, x)`, which
/// is `Σ r·y`.
#[differentiable]
fn polar(x: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
    let r = x.hypot(y);
    (r.powi(2) * y.atan2(x).sin()).sum()
}

#[test]
fn a_mixture_and_polar_coordinates_have_the_gradients_of_their_formulas() {
    let x = Tensor::from_vec(vec![-2.1, -1.4, 0.3, 1.9, 2.5, 3.2], &[6]);
    let means = Tensor::from_vec(vec![-1.0, 2.0], &[2]);
    let logit = Tensor::from_vec(vec![0.4], &[1]);
    check_variants!(mixture_nll, mixture_nll_value_and_grad, mixture_nll_grad, mixture_nll_vjp, mixture_nll_jvp, mixture_nll_pullback; [means, logit]; (&means, &logit, &x));
    // The means' gradient by hand: -mean(responsibility_k (x - μ_k)).
    let (g_means, _) = mixture_nll_grad(&means, &logit, &x);
    let p: f64 = 1.0 / (1.0 + (-0.4f64).exp());
    for (k, (mu, w)) in [(-1.0, p), (2.0, 1.0 - p)].into_iter().enumerate() {
        let want: f64 = -x
            .to_vec()
            .iter()
            .map(|&xi| {
                let d0 = p * (-(xi + 1.0) * (xi + 1.0) / 2.0).exp();
                let d1 = (1.0 - p) * (-(xi - 2.0) * (xi - 2.0) / 2.0).exp();
                let dk = w * (-(xi - mu) * (xi - mu) / 2.0).exp();
                dk / (d0 + d1) * (xi - mu)
            })
            .sum::<f64>()
            / 6.0;
        let got = g_means.to_vec()[k];
        assert!((got - want).abs() < 1e-13, "means[{k}]: {got} vs {want}");
    }

    let px = Tensor::from_vec(vec![0.8, -1.3, 2.0, -0.4], &[4]);
    let py = Tensor::from_vec(vec![0.5, 1.1, -0.7, -1.6], &[4]);
    check_variants!(polar, polar_value_and_grad, polar_grad, polar_vjp, polar_jvp, polar_pullback; [px, py]; (&px, &py));
    // Σ r y = Σ y √(x² + y²): ∂/∂x = x y / r, ∂/∂y = r + y² / r.
    let (gx, gy) = polar_grad(&px, &py);
    for i in 0..4 {
        let (x, y) = (px.to_vec()[i], py.to_vec()[i]);
        let r = x.hypot(y);
        assert!((gx.to_vec()[i] - x * y / r).abs() < 1e-13);
        assert!((gy.to_vec()[i] - (r + y * y / r)).abs() < 1e-13);
    }
}

/// `$fused` with `#[differentiable]` and `$unfused` with `fuse = false`, same body.
macro_rules! both {
    (fn $fused:ident / $unfused:ident <$t:ident: Element> ($($params:tt)*) -> $ret:ty $body:block) => {
        #[differentiable]
        fn $fused<$t: Element>($($params)*) -> $ret $body
        #[differentiable(fuse = false)]
        fn $unfused<$t: Element>($($params)*) -> $ret $body
    };
}

both! {
    fn every_function / every_function_unfused<T: Element>(x: &Tensor<T>) -> Tensor<T> {
        let s = x * 0.3;
        let a = x.erf() * x.atan() + x.sinh().asinh() - x.log_sigmoid() + (x.square() + 1.5).lgamma();
        let b = (x * 0.5).tanh().erfinv() + (x.square() + 1.2).acosh() + s.atanh() * s.asin() + s.acos();
        let c = x.expm1() + (x.square() + 1.0).digamma() * x.erfc() + x.cosh();
        let steps = x.sign() * x.floor() + x.ceil() * x.round();
        (a * b + c + steps * x).sum()
    }
}

/// `a` and `b` agree to `ulps` units in the last place of the larger magnitude.
fn assert_ulps<T: Element>(what: &str, a: &Tensor<T>, b: &Tensor<T>, ulps: f64) {
    let eps = if T::NAME == "f32" {
        f64::from(f32::EPSILON)
    } else {
        f64::EPSILON
    };
    for (i, (x, y)) in a.to_vec().iter().zip(b.to_vec()).enumerate() {
        let (x, y) = (x.to_real(), y.to_real());
        let scale = x.abs().max(y.abs()).max(1e-30);
        assert!(
            (x - y).abs() <= ulps * eps * scale,
            "{what}[{i}]: {x} against {y}"
        );
    }
}

#[test]
fn every_new_function_fused_agrees_with_its_unfused_twin_and_its_hessian() {
    // Values in [-1.4, 1.4], none within 0.05 of an integer or a half (the jumps of the
    // piecewise-constant ops), far beyond the finite-difference steps.
    let x = Tensor::from_vec(vec![-1.37, -0.8, -0.33, 0.12, 0.61, 1.24, 0.93], &[7]);
    check_variants!(every_function, every_function_value_and_grad, every_function_grad, every_function_vjp, every_function_jvp, every_function_pullback; [x]; (&x));

    let g = every_function_grad(&x);
    let g_unfused = every_function_unfused_grad(&x);
    assert_eq!(
        every_function(&x).to_vec(),
        every_function_unfused(&x).to_vec()
    );
    assert_ulps("f64 gradient", &g, &g_unfused, 64.0);
    let x32 = x.cast::<f32>();
    assert_eq!(
        every_function(&x32).to_vec(),
        every_function_unfused(&x32).to_vec()
    );
    assert_ulps(
        "f32 gradient",
        &every_function_grad(&x32),
        &every_function_unfused_grad(&x32),
        64.0,
    );

    // Hessian-vector products run forward mode on dual numbers through every function (the
    // digamma's second derivative is ψ''): against central differences of the gradient.
    let v = Tensor::rand_normal(&[7], 0.0, 1.0, 5);
    let (_, hv) = every_function_hvp(&x, &v);
    let (_, hv_unfused) = every_function_unfused_hvp(&x, &v);
    assert_ulps("Hv", &hv, &hv_unfused, 64.0);
    let h = 1e-5;
    let fd = (every_function_grad(&(&x + &(&v * h))) - every_function_grad(&(&x - &(&v * h))))
        / (2.0 * h);
    for (a, b) in hv.to_vec().iter().zip(fd.to_vec()) {
        assert!(
            (a - b).abs() <= 1e-6 * (1.0 + b.abs()),
            "Hv {a} against {b}"
        );
    }
}
