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
