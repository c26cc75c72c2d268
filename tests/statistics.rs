//! The statistics ops end to end, in the models they are for: a regression with a standardised
//! hidden layer (`(h - mean) / std`) trained by gradient descent, a linear model fitted by
//! maximum likelihood with its variance profiled out (`var`), Cox's partial likelihood for
//! survival data (`argsort` and `logcumsumexp`), least trimmed squares (`sort`), and an
//! integral on a `linspace` grid (a constant inside the function, in `f_hvp` too), and the
//! sample skewness (`std_axes`). Each is checked against finite differences in every generated
//! variant, against a gradient derived by hand, and in `f_hvp` (the rules on dual numbers)
//! against differences of the gradient.

mod support;

use rune_ad::prelude::*;
use support::check_variants;

/// `f_hvp` (forward mode on dual numbers through every rule of `f_grad`) against central
/// differences of `f_grad`, and symmetric.
macro_rules! check_hessian {
    ($grad:ident, $hvp:ident, $w:expr $(, $arg:expr)*) => {
        check_hvp(
            |a| vec![$grad(&a[0] $(, $arg)*)],
            |a, v| vec![$hvp(&a[0] $(, $arg)*, &v[0]).1],
            std::slice::from_ref(&$w),
            1e-5,
            1e-6,
            1e-8,
        )
        .unwrap()
    };
}

fn design(n: usize, seed: u64) -> Tensor<f64> {
    Tensor::rand_normal(&[n, 3], 0.0, 1.0, seed)
}

/// `|a - b| <= tol (1 + |b|)` elementwise.
#[track_caller]
fn assert_close(what: &str, a: &Tensor<f64>, b: &Tensor<f64>, tol: f64) {
    assert_eq!(a.shape(), b.shape(), "{what}");
    for (x, y) in a.to_vec().iter().zip(b.to_vec()) {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{what}: {a:?} vs {b:?}"
        );
    }
}

/// A regression whose hidden layer is standardised per example over its units (a layer norm
/// without the affine part), then squashed and read out.
#[derive(Clone, Differentiable)]
struct StandardizedMlp {
    w1: Tensor<f64>,
    w2: Tensor<f64>,
}

impl StandardizedMlp {
    #[differentiable]
    fn loss(&self, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
        let h = x.matmul(&self.w1);
        let z = (&h - h.mean_axes(&[1], true)) / h.std_axes(&[1], true, 0);
        (z.tanh().matmul(&self.w2) - y).square().mean()
    }
}

#[test]
fn a_standardised_layer_trains_and_has_the_gradient_of_its_loss() {
    let x = design(16, 1);
    let y = (x.shrink(&[(0, 16), (0, 1)]) * 2.0 - x.shrink(&[(0, 16), (2, 3)])).tanh();
    let mut model = StandardizedMlp {
        w1: Tensor::rand_normal(&[3, 5], 0.0, 1.0, 2),
        w2: Tensor::rand_normal(&[5, 1], 0.0, 0.3, 3),
    };
    check_variants!(StandardizedMlp::loss, StandardizedMlp::loss_value_and_grad, StandardizedMlp::loss_grad, StandardizedMlp::loss_vjp, StandardizedMlp::loss_jvp, StandardizedMlp::loss_pullback; [model]; (&model, &x, &y));

    // The standardised units have mean 0 and (population) standard deviation 1 per example.
    let h = x.matmul(&model.w1);
    let z = (&h - h.mean_axes(&[1], true)) / h.std_axes(&[1], true, 0);
    assert_close(
        "means",
        &z.mean_axes(&[1], false),
        &Tensor::zeros(&[16]),
        1e-14,
    );
    assert_close(
        "stds",
        &z.std_axes(&[1], false, 0),
        &Tensor::ones(&[16]),
        1e-14,
    );
    // Standardising makes the loss invariant to scaling `w1` (every `h` scales alike), so
    // d/dt loss(w1 (1 + t)) = <grad w1, w1> = 0.
    let g = model.loss_grad(&x, &y);
    let radial = (&g.w1 * &model.w1).sum().item();
    assert!(radial.abs() < 1e-13, "{radial}");

    let first = model.loss(&x, &y).item();
    for _ in 0..300 {
        let g = model.loss_grad(&x, &y);
        model.axpy(-0.2, &g);
    }
    let last = model.loss(&x, &y).item();
    assert!(last < 0.25 * first, "{first} -> {last}");
    check_variants!(StandardizedMlp::loss, StandardizedMlp::loss_value_and_grad, StandardizedMlp::loss_grad, StandardizedMlp::loss_vjp, StandardizedMlp::loss_jvp, StandardizedMlp::loss_pullback; [model]; (&model, &x, &y));
}

/// The Gaussian negative log-likelihood of `y = x w + c + noise` with the intercept `c` and the
/// noise variance at their maximum-likelihood values given `w`: the mean of the residuals and
/// their population variance, so the likelihood is `n/2 (ln(2π var(r)) + 1)`.
#[differentiable(hvp)]
fn profile_nll(
    w: &Tensor<f64>,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    let r = y - x.matmul(w);
    let n = r.len() as f64;
    ((r.var(0) * (2.0 * std::f64::consts::PI)).ln() + 1.0) * (0.5 * n)
}

#[test]
fn a_profile_likelihood_has_its_gradient_and_its_maximum_at_least_squares() {
    let x = design(20, 4);
    let noise = Tensor::rand_normal(&[20], 0.0, 0.3, 5);
    let y = x.matmul(&Tensor::from_vec(vec![1.0, -2.0, 0.5], &[3])) + 7.0 + noise;
    let w = Tensor::from_vec(vec![0.4, -1.0, 0.0], &[3]);
    check_variants!(profile_nll, profile_nll_value_and_grad, profile_nll_grad, profile_nll_vjp, profile_nll_jvp, profile_nll_pullback; [w]; (&w, &x, &y));

    // By hand: d/dw n/2 ln var(r) = -xᵀ(r - mean(r)) / var(r).
    let r = &y - x.matmul(&w);
    let centered = &r - r.mean();
    let var = centered.square().mean();
    let want = -(x.t().matmul(&centered)) / var;
    assert_close("gradient", &profile_nll_grad(&w, &x, &y), &want, 1e-12);
    check_hessian!(profile_nll_grad, profile_nll_hvp, w, &x, &y);

    // Its maximum is least squares on the centred data: `(Xcᵀ Xc) w = Xcᵀ yc`.
    let xc = &x - x.mean_axes(&[0], true);
    let yc = &y - y.mean();
    let ols = xc
        .t()
        .matmul(&xc)
        .solve(&xc.t().matmul(&yc).reshape(&[3, 1]))
        .reshape(&[3]);
    assert_close(
        "gradient at the fit",
        &profile_nll_grad(&ols, &x, &y),
        &Tensor::zeros(&[3]),
        1e-10,
    );
    // The intercept is profiled out: the data moved by 1e8 have the same likelihood, to the
    // last digits, because `var` does not cancel.
    let far = &y + 1e8;
    let (a, b) = (
        profile_nll(&ols, &x, &y).item(),
        profile_nll(&ols, &x, &far).item(),
    );
    assert!((a - b).abs() < 1e-5 * a.abs(), "{a} vs {b}");
}

/// The negative log partial likelihood of Cox's proportional-hazards model (no tied times):
/// `-Σ_{i: event} (η_i - ln Σ_{j: t_j >= t_i} e^{η_j})`, `η = x w`. In order of decreasing
/// time each risk set is a prefix, so the log-sums are one `logcumsumexp`.
#[differentiable(hvp)]
fn cox_nll(
    w: &Tensor<f64>,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] time: &Tensor<f64>,
    #[nodiff] event: &Tensor<f64>,
) -> Tensor<f64> {
    let order = (-time).argsort(0);
    let eta = x.matmul(w).gather(0, &order);
    let observed = event.gather(0, &order);
    -((&eta - eta.logcumsumexp(0)) * observed).sum()
}

#[test]
fn cox_partial_likelihood_has_the_gradient_of_its_formula() {
    let n = 12;
    let x = design(n, 6);
    let time = Tensor::rand_uniform(&[n], 0.5, 10.0, 7);
    let event = Tensor::from_vec((0..n).map(|i| f64::from(i % 3 != 1)).collect(), &[n]);
    let w = Tensor::from_vec(vec![0.5, -0.3, 0.8], &[3]);
    check_variants!(cox_nll, cox_nll_value_and_grad, cox_nll_grad, cox_nll_vjp, cox_nll_jvp, cox_nll_pullback; [w]; (&w, &x, &time, &event));

    // By hand, in plain loops: -Σ_{i: event} (x_i - Σ_{j ∈ R_i} x_j e^{η_j} / Σ_{j ∈ R_i} e^{η_j}).
    let (xs, ts, es) = (x.to_vec(), time.to_vec(), event.to_vec());
    let eta: Vec<f64> = x.matmul(&w).to_vec();
    let mut value = 0.0;
    let mut grad = [0.0; 3];
    for i in (0..n).filter(|&i| es[i] == 1.0) {
        let risk: Vec<usize> = (0..n).filter(|&j| ts[j] >= ts[i]).collect();
        let total: f64 = risk.iter().map(|&j| eta[j].exp()).sum();
        value -= eta[i] - total.ln();
        for k in 0..3 {
            let weighted: f64 = risk.iter().map(|&j| xs[3 * j + k] * eta[j].exp()).sum();
            grad[k] -= xs[3 * i + k] - weighted / total;
        }
    }
    let (v, g) = cox_nll_value_and_grad(&w, &x, &time, &event);
    assert!(
        (v.item() - value).abs() < 1e-12 * value.abs(),
        "{v:?} vs {value}"
    );
    assert_close(
        "gradient",
        &g,
        &Tensor::from_vec(grad.to_vec(), &[3]),
        1e-12,
    );
    check_hessian!(cox_nll_grad, cox_nll_hvp, w, &x, &time, &event);
}

/// Least trimmed squares: the mean of the `k` smallest squared residuals, robust to the rest.
#[differentiable(hvp)]
fn trimmed_loss(
    w: &Tensor<f64>,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
    k: usize,
) -> Tensor<f64> {
    let r2 = (y - x.matmul(w)).square();
    r2.sort(0).shrink(&[(0, k)]).mean()
}

#[test]
fn least_trimmed_squares_has_the_gradient_of_the_kept_residuals() {
    let x = design(10, 8);
    let mut y = x
        .matmul(&Tensor::from_vec(vec![1.0, 0.5, -1.0], &[3]))
        .to_vec();
    // Two gross outliers.
    y[3] += 40.0;
    y[7] -= 25.0;
    let y = Tensor::from_vec(y, &[10]);
    let w = Tensor::from_vec(vec![0.8, 0.6, -0.7], &[3]);
    check_variants!(trimmed_loss, trimmed_loss_value_and_grad, trimmed_loss_grad, trimmed_loss_vjp, trimmed_loss_jvp, trimmed_loss_pullback; [w]; (&w, &x, &y, 8));

    // By hand: -2/k Σ_{i kept} r_i x_i over the 8 smallest squared residuals: all but the
    // outliers.
    let r = &y - x.matmul(&w);
    let r2 = r.square().to_vec();
    let mut kept: Vec<usize> = (0..10).collect();
    kept.sort_by(|&a, &b| r2[a].total_cmp(&r2[b]));
    kept.truncate(8);
    assert!(!kept.contains(&3) && !kept.contains(&7));
    let (xs, rs) = (x.to_vec(), r.to_vec());
    let want: Vec<f64> = (0..3)
        .map(|c| {
            kept.iter()
                .map(|&i| -2.0 / 8.0 * rs[i] * xs[3 * i + c])
                .sum()
        })
        .collect();
    assert_close(
        "gradient",
        &trimmed_loss_grad(&w, &x, &y, 8),
        &Tensor::from_vec(want, &[3]),
        1e-13,
    );
    // Where the kept set does not change, the Hessian is that of the kept residuals' squares.
    check_hessian!(trimmed_loss_grad, trimmed_loss_hvp, w, &x, &y, 8);
}

/// The sample skewness of each row, `mean(((x - mean) / std)³)`, summed over the rows.
#[differentiable(hvp)]
fn skewness(x: &Tensor<f64>) -> Tensor<f64> {
    let z = (x - x.mean_axes(&[1], true)) / x.std_axes(&[1], true, 0);
    z.powi(3).mean_axes(&[1], false).sum()
}

#[test]
fn skewness_has_its_value_and_derivatives() {
    // Row [0, 0, 3]: deviations [-1, -1, 2], std √2, so mean(z³) = (8 - 2) / (3 · 2√2) = 1/√2;
    // a symmetric row has none.
    let x = Tensor::from_vec(vec![0.0, 0.0, 3.0], &[1, 3]);
    let symmetric = Tensor::from_vec(vec![-1.0, 0.5, 2.0], &[1, 3]);
    assert!(skewness(&symmetric).item().abs() < 1e-15);
    assert!((skewness(&x).item() - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-15);
    // Skewness is invariant to shifting and scaling each row: the gradient is orthogonal to
    // the ones and to the row.
    let x = Tensor::rand_normal(&[3, 6], 0.0, 1.0, 9);
    check_variants!(skewness, skewness_value_and_grad, skewness_grad, skewness_vjp, skewness_jvp, skewness_pullback; [x]; (&x));
    let g = skewness_grad(&x);
    assert_close(
        "shift",
        &g.sum_axes(&[1], false),
        &Tensor::zeros(&[3]),
        1e-13,
    );
    assert_close(
        "scale",
        &(&g * &x).sum_axes(&[1], false),
        &Tensor::zeros(&[3]),
        1e-13,
    );
    check_hessian!(skewness_grad, skewness_hvp, x);
}

/// `∫₀¹ e^{a t} dt` by the trapezoidal rule on a `linspace` grid: the grid is a constant (built
/// in `f64` and cast to dual numbers in the function `f_hvp` runs).
#[differentiable(hvp)]
fn integral(a: &Tensor<f64>) -> Tensor<f64> {
    let n = 101;
    let t = Tensor::<f64>::linspace(0.0, 1.0, n);
    let f = (a * &t).exp();
    let ends = f.shrink(&[(0, 1)]).sum() + f.shrink(&[(n - 1, n)]).sum();
    (f.sum() - ends * 0.5) / (n - 1) as f64
}

#[test]
fn an_integral_on_a_linspace_grid_has_its_derivatives() {
    let a = Tensor::from_vec(vec![0.7], &[1]);
    check_variants!(integral, integral_value_and_grad, integral_grad, integral_vjp, integral_jvp, integral_pullback; [a]; (&a));
    // Against the exact integral (e^a - 1)/a and its derivatives, to the rule's O(h²) error.
    let e = 0.7f64.exp();
    let exact = (e - 1.0) / 0.7;
    let d1 = (0.7 * e - e + 1.0) / (0.7 * 0.7);
    assert!((integral(&a).item() - exact).abs() < 1e-4);
    assert!((integral_grad(&a).item() - d1).abs() < 1e-4);
    // Forward over reverse runs the function on dual numbers, the grid included.
    let (g, hv) = integral_hvp(&a, &Tensor::ones(&[1]));
    assert_close("gradient beside the Hessian", &g, &integral_grad(&a), 1e-14);
    let h = 1e-5;
    let fd = (integral_grad(&(&a + h)).item() - integral_grad(&(&a - h)).item()) / (2.0 * h);
    assert!((hv.item() - fd).abs() < 1e-7, "{hv:?} vs {fd}");
    // ∫ t² e^{a t} dt, the exact second derivative, to the rule's error.
    let d2 = (e * (0.7 * 0.7 - 2.0 * 0.7 + 2.0) - 2.0) / 0.7f64.powi(3);
    assert!((hv.item() - d2).abs() < 1e-4, "{hv:?} vs {d2}");
}
