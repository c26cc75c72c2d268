//! Linear algebra end to end, as a scientific user writes it: a Gaussian process's log marginal
//! likelihood through `cholesky`, `solve_triangular` and the log-determinant, least squares
//! through `solve`, and a generic function over every matrix op whose Hessian-vector products
//! run the factorizations on dual numbers.

mod support;

use rune_ad::prelude::*;
use support::check_variants;

/// The hyperparameters of a squared-exponential kernel, on the log scale.
#[derive(Clone, Differentiable)]
struct Kernel {
    log_scale: Tensor<f64>,
    log_length: Tensor<f64>,
    log_noise: Tensor<f64>,
}

impl Kernel {
    /// `K = s² exp(-|xi - xj|² / (2ℓ²)) + σ² I` for 1-D inputs `x` of shape `[n, 1]`.
    #[differentiable]
    fn covariance(&self, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
        let d = x - x.t();
        let ell = self.log_length.exp();
        let k = (&self.log_scale * 2.0).exp() * (-(&d * &d) / (ell.square() * 2.0)).exp();
        let n = x.shape()[0];
        k + Tensor::eye(n) * (&self.log_noise * 2.0).exp()
    }

    /// The negative log marginal likelihood `½ yᵀK⁻¹y + ½ ln det K + n/2 ln 2π`.
    #[differentiable]
    fn nll(&self, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
        let l = self.covariance(x).cholesky();
        let alpha = l.solve_triangular(y, true, false);
        let n = x.shape()[0] as f64;
        (alpha.square().sum() + l.diagonal().ln().sum() * 2.0) * 0.5
            + n * 0.5 * (2.0 * std::f64::consts::PI).ln()
    }
}

fn data() -> (Tensor<f64>, Tensor<f64>) {
    let x = Tensor::from_vec(vec![-2.0, -1.3, -0.4, 0.2, 0.9, 1.7, 2.4], &[7, 1]);
    let y = x.sin() + Tensor::rand_normal(&[7, 1], 0.0, 0.1, 3);
    (x, y)
}

#[test]
fn a_gaussian_process_likelihood_has_the_gradient_of_its_formula() {
    let (x, y) = data();
    let kernel = Kernel {
        log_scale: Tensor::scalar(0.1),
        log_length: Tensor::scalar(-0.2),
        log_noise: Tensor::scalar(-1.5),
    };
    check_variants!(Kernel::nll, Kernel::nll_value_and_grad, Kernel::nll_grad, Kernel::nll_vjp, Kernel::nll_jvp, Kernel::nll_pullback; [kernel]; (&kernel, &x, &y));

    // The same likelihood through `solve` and `logabsdet` (no factor), and its gradient by the
    // textbook formula ∂/∂θ = ½ tr((K⁻¹ - ααᵀ) ∂K/∂θ), α = K⁻¹y: for the noise,
    // ∂K/∂(log σ) = 2σ² I.
    let k = kernel.covariance(&x);
    let alpha = k.solve(&y);
    let direct = (y.t().matmul(&alpha).sum() + k.logabsdet()) * 0.5
        + 3.5 * (2.0 * std::f64::consts::PI).ln();
    let (value, grad) = kernel.nll_value_and_grad(&x, &y);
    assert!((value.item() - direct.item()).abs() < 1e-12);
    let sigma2 = (-3.0f64).exp();
    let w = k.inv() - alpha.matmul(&alpha.t());
    let want = 0.5 * (w * (2.0 * sigma2)).trace().item();
    assert!(
        (grad.log_noise.item() - want).abs() < 1e-12,
        "{} vs {want}",
        grad.log_noise.item()
    );
}

/// Least squares by the normal equations `(XᵀX) w = Xᵀy`, differentiated in the design and the
/// data, with `det` and `inv` of the Gram matrix beside it.
#[differentiable]
fn least_squares(x: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
    let gram = x.t().matmul(x);
    let w = gram.solve(&x.t().matmul(y));
    let r = x.matmul(&w) - y;
    r.square().sum() + gram.det().ln() + gram.inv().trace()
}

#[test]
fn least_squares_through_solve_det_and_inv() {
    let x = Tensor::rand_normal(&[6, 2], 0.0, 1.0, 5);
    let y = Tensor::rand_normal(&[6, 1], 0.0, 1.0, 6);
    check_variants!(least_squares, least_squares_value_and_grad, least_squares_grad, least_squares_vjp, least_squares_jvp, least_squares_pullback; [x, y]; (&x, &y));
}

/// Every matrix op in one generic function, so that `f_hvp` runs them on dual numbers.
#[differentiable]
fn matrix_ops<T: Element>(a: &Tensor<T>, b: &Tensor<T>) -> Tensor<T> {
    let spd = a.matmul(&a.t()) + Tensor::eye(3) * 2.0;
    let l = spd.cholesky();
    let x = l.solve_triangular(b, true, false);
    let m = a + Tensor::eye(3) * 3.0;
    let z = m.solve(b) + m.inv().matmul(b);
    (x * z).sum()
        + m.logabsdet() * m.det()
        + (a.triu(0) - a.tril(-1)).trace()
        + a.diagonal().diag().sum()
}

#[test]
fn matrix_ops_differentiate_to_second_order_on_dual_numbers() {
    let a = Tensor::from_vec(
        vec![0.4, -0.2, 0.1, 0.3, 0.5, -0.3, -0.1, 0.2, 0.6],
        &[3, 3],
    );
    let b = Tensor::from_vec(vec![1.0, -0.5, 0.3, 0.8, -0.2, 0.4], &[3, 2]);
    check_variants!(matrix_ops, matrix_ops_value_and_grad, matrix_ops_grad, matrix_ops_vjp, matrix_ops_jvp, matrix_ops_pullback; [a, b]; (&a, &b));
    // Hessian-vector products against central differences of the gradient.
    let (va, vb) = (
        Tensor::rand_normal(&[3, 3], 0.0, 1.0, 7),
        Tensor::rand_normal(&[3, 2], 0.0, 1.0, 8),
    );
    let (_, (ha, hb)) = matrix_ops_hvp(&a, &b, &va, &vb);
    let h = 1e-5;
    let (ga1, gb1) = matrix_ops_grad(&(&a + &(&va * h)), &(&b + &(&vb * h)));
    let (ga0, gb0) = matrix_ops_grad(&(&a - &(&va * h)), &(&b - &(&vb * h)));
    for (got, (p, q)) in [(ha, (ga1, ga0)), (hb, (gb1, gb0))] {
        let fd = (p - q) / (2.0 * h);
        for (g, f) in got.to_vec().iter().zip(fd.to_vec()) {
            assert!(
                (g - f).abs() <= 1e-6 * (1.0 + f.abs()),
                "Hv {g} against {f}"
            );
        }
    }
    // And in f32.
    let (a32, b32) = (a.cast::<f32>(), b.cast::<f32>());
    let (ga, _) = matrix_ops_grad(&a32, &b32);
    let (ga64, _) = matrix_ops_grad(&a, &b);
    for (g, w) in ga.to_vec().iter().zip(ga64.to_vec()) {
        assert!(
            (f64::from(*g) - w).abs() <= 1e-4 * (1.0 + w.abs()),
            "{g} vs {w}"
        );
    }
}

/// The Gaussian process's likelihood through `cho_solve` and `slogdet`: the same value and
/// gradient as through `cholesky`, `solve_triangular` and the diagonal of the factor.
#[differentiable]
fn gp_nll_cho_solve(k: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
    let l = k.cholesky();
    let alpha = l.cho_solve(y);
    let (_, logdet) = k.slogdet();
    (y * alpha).sum() * 0.5 + logdet * 0.5
}

#[differentiable]
fn gp_nll_triangular(k: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
    let l = k.cholesky();
    let z = l.solve_triangular(y, true, false);
    z.square().sum() * 0.5 + l.diagonal().ln().sum()
}

#[test]
fn cho_solve_and_slogdet_agree_with_the_triangular_form() {
    let (x, y) = data();
    let kernel = Kernel {
        log_scale: Tensor::scalar(0.1),
        log_length: Tensor::scalar(-0.2),
        log_noise: Tensor::scalar(-1.5),
    };
    let k = kernel.covariance(&x);
    check_variants!(gp_nll_cho_solve, gp_nll_cho_solve_value_and_grad, gp_nll_cho_solve_grad, gp_nll_cho_solve_vjp, gp_nll_cho_solve_jvp, gp_nll_cho_solve_pullback; [k, y]; (&k, &y));
    let (v1, (gk1, gy1)) = gp_nll_cho_solve_value_and_grad(&k, &y);
    let (v2, (gk2, gy2)) = gp_nll_triangular_value_and_grad(&k, &y);
    assert!((v1.item() - v2.item()).abs() < 1e-12);
    // `cholesky` reads K's lower triangle and `slogdet` all of it: the gradients differ there,
    // but folded onto the lower triangle (what a symmetric perturbation sees) they agree.
    let fold = |g: &Tensor<f64>| (g + &g.t()).tril(-1) + g.diagonal().diag();
    for (a, b) in fold(&gk1).to_vec().iter().zip(fold(&gk2).to_vec()) {
        assert!((a - b).abs() < 1e-10, "{a} vs {b}");
    }
    for (a, b) in gy1.to_vec().iter().zip(gy2.to_vec()) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
}

/// Least squares through `lstsq` (QR) and through the normal equations: one value, one gradient.
#[differentiable]
fn fit_lstsq(x: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
    let w = x.lstsq(y);
    (x.matmul(&w) - y).square().sum() + w.square().sum()
}

#[differentiable]
fn fit_normal_equations(x: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
    let w = x.t().matmul(x).solve(&x.t().matmul(y));
    (x.matmul(&w) - y).square().sum() + w.square().sum()
}

#[test]
fn lstsq_agrees_with_the_normal_equations() {
    let x = Tensor::rand_normal(&[2, 7, 3], 0.0, 1.0, 11);
    let y = Tensor::rand_normal(&[2, 7, 2], 0.0, 1.0, 12);
    check_variants!(fit_lstsq, fit_lstsq_value_and_grad, fit_lstsq_grad, fit_lstsq_vjp, fit_lstsq_jvp, fit_lstsq_pullback; [x, y]; (&x, &y));
    let (v1, (gx1, gy1)) = fit_lstsq_value_and_grad(&x, &y);
    let (v2, (gx2, gy2)) = fit_normal_equations_value_and_grad(&x, &y);
    assert!((v1.item() - v2.item()).abs() < 1e-10);
    for (a, b) in [(gx1, gx2), (gy1, gy2)] {
        for (p, q) in a.to_vec().iter().zip(b.to_vec()) {
            assert!((p - q).abs() < 1e-10, "{p} vs {q}");
        }
    }
}

/// The spectral factorizations in one generic function, through their tuple forms, with losses
/// that do not depend on the vectors' signs: a projection onto the leading left singular
/// vectors, the nuclear norm, a matrix function through `eigh` and a product of QR's factors;
/// and an `einsum`.
#[differentiable]
fn spectral<T: Element>(a: &Tensor<T>, y: &Tensor<T>) -> Tensor<T> {
    let (u, s, vh) = a.svd();
    let projected = u.matmul(&u.t().matmul(y));
    let (w, v) = a.t().matmul(a).eigh();
    let sqrt_gram = (&v * &w.sqrt().expand_dims(-2)).matmul(&v.t());
    let (q, r) = a.qr();
    projected.square().sum()
        + s.sum()
        + sqrt_gram.trace()
        + (vh.t() * s.expand_dims(-2)).matmul(&vh).sum()
        + q.matmul(&r).sum()
        + r.diagonal().ln().sum()
        + einsum("ij,kj->ik", &projected, y).trace()
}

/// The terms of [`spectral`] whose gradient has a closed form.
#[differentiable]
fn by_hand(a: &Tensor<f64>) -> Tensor<f64> {
    let (w, v) = a.t().matmul(a).eigh();
    let sqrt_gram = (&v * &w.sqrt().expand_dims(-2)).matmul(&v.t());
    a.svdvals().sum() + sqrt_gram.trace() + a.qr_r().diagonal().ln().sum()
}

#[test]
fn spectral_factorizations_differentiate_to_second_order() {
    let a = Tensor::rand_normal(&[5, 3], 0.0, 1.0, 21);
    let y = Tensor::rand_normal(&[5, 2], 0.0, 1.0, 22);
    check_variants!(spectral, spectral_value_and_grad, spectral_grad, spectral_vjp, spectral_jvp, spectral_pullback; [a, y]; (&a, &y));
    // By hand: Σ s and tr √(AᵀA) are both the nuclear norm, whose gradient is U Vh, and Σ ln
    // diag R = ½ ln det AᵀA has the gradient A (AᵀA)⁻¹.
    let (u, _, vh) = a.svd();
    let want = u.matmul(&vh) * 2.0 + a.matmul(&a.t().matmul(&a).inv());
    let got = by_hand_grad(&a);
    for (g, w) in got.to_vec().iter().zip(want.to_vec()) {
        assert!((g - w).abs() < 1e-12, "{g} vs {w}");
    }
    // Hessian-vector products against central differences of the gradient (the factorizations
    // run on dual numbers).
    let (va, vy) = (
        Tensor::rand_normal(&[5, 3], 0.0, 1.0, 23),
        Tensor::rand_normal(&[5, 2], 0.0, 1.0, 24),
    );
    let (_, (ha, hy)) = spectral_hvp(&a, &y, &va, &vy);
    let h = 1e-5;
    let (ga1, gy1) = spectral_grad(&(&a + &(&va * h)), &(&y + &(&vy * h)));
    let (ga0, gy0) = spectral_grad(&(&a - &(&va * h)), &(&y - &(&vy * h)));
    for (got, (p, q)) in [(ha, (ga1, ga0)), (hy, (gy1, gy0))] {
        let fd = (p - q) / (2.0 * h);
        for (g, f) in got.to_vec().iter().zip(fd.to_vec()) {
            assert!(
                (g - f).abs() <= 1e-5 * (1.0 + f.abs()),
                "Hv {g} against {f}"
            );
        }
    }
}

/// The ops of a matrix and a right-hand side with batch axes that broadcast (one matrix against
/// a batch of right-hand sides, a batch of matrices against one, batches `[4]` and `[2, 1]`
/// meeting as `[2, 4]`), and QR of a batch of wide matrices, in one generic function so that
/// `f_hvp` runs them on dual numbers.
#[differentiable]
fn broadcast_systems<T: Element>(
    a: &Tensor<T>,
    c: &Tensor<T>,
    b: &Tensor<T>,
    d: &Tensor<T>,
    w: &Tensor<T>,
) -> Tensor<T> {
    // a [3, 3] one matrix, c [4, 3, 3] a batch, b [2, 1, 3, 2] right-hand sides.
    let m = a + Tensor::eye(3) * 3.0;
    let x = m.solve(b);
    let l = (a.matmul(&a.t()) + Tensor::eye(3) * 2.0).cholesky();
    let z = l.cho_solve(b);
    let t = l.solve_triangular(&x, true, true);
    let mc = c + Tensor::eye(3) * 3.0;
    let y = mc.solve(b);
    let u = mc.solve_triangular(&z.sum_axes(&[0, 1], false), false, false);
    // d [5, 3] one design against the right-hand sides [4, 5, 2] of the batch c stacked.
    let rhs = c.reshape(&[4, 9]).shrink(&[(0, 4), (0, 5)]).expand_dims(-1) * x.sum();
    let fit = d.lstsq(&(rhs.clone() - rhs.sum_axes(&[0], true)));
    // w [2, 2, 4] a batch of wide matrices.
    let (q, r) = w.qr();
    (x.square() * &z).sum()
        + t.sum()
        + y.tanh().sum()
        + u.square().sum()
        + fit.square().sum()
        + q.sum()
        + r.square().sum() * 0.3
        + r.diagonal().ln().sum()
}

#[test]
fn broadcast_systems_and_wide_qr_differentiate_to_second_order() {
    let a = Tensor::rand_normal(&[3, 3], 0.0, 0.3, 31);
    let c = Tensor::rand_normal(&[4, 3, 3], 0.0, 0.3, 32);
    let b = Tensor::rand_normal(&[2, 1, 3, 2], 0.0, 1.0, 33);
    let d = Tensor::rand_normal(&[5, 3], 0.0, 1.0, 34);
    let w = Tensor::rand_normal(&[2, 2, 4], 0.0, 1.0, 35);
    check_variants!(broadcast_systems, broadcast_systems_value_and_grad, broadcast_systems_grad, broadcast_systems_vjp, broadcast_systems_jvp, broadcast_systems_pullback; [a, c, b, d, w]; (&a, &c, &b, &d, &w));
    // Hessian-vector products against central differences of the gradient.
    let dirs: Vec<Tensor<f64>> = [&a, &c, &b, &d, &w]
        .iter()
        .enumerate()
        .map(|(i, x)| Tensor::rand_normal(x.shape(), 0.0, 1.0, 40 + i as u64))
        .collect();
    let (_, hv) = broadcast_systems_hvp(
        &a, &c, &b, &d, &w, &dirs[0], &dirs[1], &dirs[2], &dirs[3], &dirs[4],
    );
    let h = 1e-5;
    let at = |s: f64| -> Vec<Tensor<f64>> {
        [&a, &c, &b, &d, &w]
            .iter()
            .zip(&dirs)
            .map(|(x, v)| *x + &(v * (s * h)))
            .collect()
    };
    let (p, q) = (at(1.0), at(-1.0));
    let gp = broadcast_systems_grad(&p[0], &p[1], &p[2], &p[3], &p[4]);
    let gq = broadcast_systems_grad(&q[0], &q[1], &q[2], &q[3], &q[4]);
    for (got, (p, q)) in [
        (hv.0, (gp.0, gq.0)),
        (hv.1, (gp.1, gq.1)),
        (hv.2, (gp.2, gq.2)),
        (hv.3, (gp.3, gq.3)),
        (hv.4, (gp.4, gq.4)),
    ] {
        let fd = (p - q) / (2.0 * h);
        for (g, f) in got.to_vec().iter().zip(fd.to_vec()) {
            assert!(
                (g - f).abs() <= 1e-5 * (1.0 + f.abs()),
                "Hv {g} against {f}"
            );
        }
    }
    // And in f32, against the f64 gradient.
    let g32 = broadcast_systems_grad(
        &a.cast::<f32>(),
        &c.cast::<f32>(),
        &b.cast::<f32>(),
        &d.cast::<f32>(),
        &w.cast::<f32>(),
    );
    let g64 = broadcast_systems_grad(&a, &c, &b, &d, &w);
    for (got, want) in [
        (g32.0, g64.0),
        (g32.1, g64.1),
        (g32.2, g64.2),
        (g32.3, g64.3),
        (g32.4, g64.4),
    ] {
        assert_eq!(got.shape(), want.shape());
        for (g, w) in got.to_vec().iter().zip(want.to_vec()) {
            assert!(
                (f64::from(*g) - w).abs() <= 1e-3 * (1.0 + w.abs()),
                "{g} vs {w}"
            );
        }
    }
}

/// A matrix of the right shape that cannot be factored is a `Singular` error, named after the
/// op the user called; shapes that do not fit are `Shape` errors.
#[test]
fn singular_matrices_are_their_own_kind_of_error() {
    let singular = Tensor::from_vec(vec![1.0, 2.0, 2.0, 4.0], &[2, 2]);
    let indefinite = Tensor::from_vec(vec![1.0, 2.0, 2.0, 1.0], &[2, 2]);
    let b = Tensor::from_vec(vec![1.0, 1.0], &[2, 1]);
    let kind = |e: ShapeError| (e.op(), e.kind());
    let singular_kind = ShapeErrorKind::Singular;
    assert_eq!(
        kind(singular.try_solve(&b).unwrap_err()),
        ("solve", singular_kind)
    );
    assert_eq!(
        kind(singular.try_inv().unwrap_err()),
        ("inv", singular_kind)
    );
    assert_eq!(
        kind(indefinite.try_cholesky().unwrap_err()),
        ("cholesky", singular_kind)
    );
    assert_eq!(kind(singular.try_qr().unwrap_err()), ("qr", singular_kind));
    assert_eq!(
        kind(singular.try_lstsq(&b).unwrap_err()),
        ("lstsq", singular_kind)
    );
    // A singular matrix has a determinant, zero, and no error.
    assert_eq!(singular.det().item(), 0.0);
    // Shapes that do not fit.
    let wide = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[1, 3]);
    assert_eq!(kind(wide.try_inv().unwrap_err()).1, ShapeErrorKind::Shape);
    assert_eq!(
        kind(singular.try_solve(&wide).unwrap_err()),
        ("solve", ShapeErrorKind::Shape)
    );
}
