//! Fitting a Gaussian process's hyperparameters by maximising its log marginal likelihood.
//!
//! A GP with a squared-exponential kernel `k(x, x') = s² exp(-(x - x')² / (2ℓ²))` and noise
//! `σ²` models `n` noisy observations `y` at inputs `x`. Its negative log marginal likelihood
//! (Rasmussen & Williams, *Gaussian Processes for Machine Learning*, eq. 2.30) is
//!
//! ```text
//! -ln p(y | x, θ) = ½ yᵀ K⁻¹ y + ½ ln det K + n/2 ln 2π,   K = k(x, x) + σ² I,
//! ```
//!
//! computed here as it is done in practice: the Cholesky factor `K = L Lᵀ`, one triangular
//! solve `α = L⁻¹ y` (so `yᵀK⁻¹y = |α|²`) and `ln det K = 2 Σ ln Lᵢᵢ`. It is one
//! `#[differentiable]` method; the macro generates its gradient in the three log-hyperparameters
//! through `cholesky` and `solve_triangular` (Murray's rules).
//!
//! The program draws 60 points of `sin(2x) + 0.3 x` with noise of standard deviation 0.1, checks
//! the generated gradient against central finite differences, fits `(s, ℓ, σ)` with Adam, and
//! prints the fitted values and the time per gradient. It panics (nonzero status) unless the
//! gradient matches the finite differences to 1e-6 and the fitted noise is within 30% of 0.1.
//!
//! ```sh
//! cargo run --release --example gaussian_process
//! ```

use std::time::Instant;

use rune_ad::optim::Adam;
use rune_ad::prelude::*;

/// The kernel's hyperparameters, on the log scale so that any value is valid.
#[derive(Clone, Differentiable)]
struct Kernel {
    log_scale: Tensor<f64>,
    log_length: Tensor<f64>,
    log_noise: Tensor<f64>,
}

impl Kernel {
    /// `K = s² exp(-(xᵢ - xⱼ)² / (2ℓ²)) + σ² I` for inputs `x` of shape `[n, 1]`.
    #[differentiable]
    fn covariance(&self, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
        let d = x - x.t();
        let length = self.log_length.exp();
        let k = (&self.log_scale * 2.0).exp() * (-(&d * &d) / (length.square() * 2.0)).exp();
        k + Tensor::eye(x.shape()[0]) * (&self.log_noise * 2.0).exp()
    }

    /// The negative log marginal likelihood of targets `y` (`[n, 1]`) at inputs `x`.
    #[differentiable]
    fn nll(&self, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
        let l = self.covariance(x).cholesky();
        let alpha = l.solve_triangular(y, true, false);
        let n = x.shape()[0] as f64;
        (alpha.square().sum() + l.diagonal().ln().sum() * 2.0) * 0.5
            + n * 0.5 * (2.0 * std::f64::consts::PI).ln()
    }

    fn describe(&self) -> String {
        format!(
            "s = {:.4}, ℓ = {:.4}, σ = {:.4}",
            self.log_scale.item().exp(),
            self.log_length.item().exp(),
            self.log_noise.item().exp()
        )
    }
}

/// The largest relative difference between the generated gradient and central differences of
/// the likelihood along each hyperparameter.
fn gradient_error(kernel: &Kernel, x: &Tensor<f64>, y: &Tensor<f64>) -> f64 {
    let grad = kernel.nll_grad(x, y);
    let h = 1e-5;
    let nudged = |which: usize, by: f64| {
        let mut k = kernel.clone();
        let field = match which {
            0 => &mut k.log_scale,
            1 => &mut k.log_length,
            _ => &mut k.log_noise,
        };
        *field = Tensor::scalar(field.item() + by);
        k.nll(x, y).item()
    };
    let analytic = [
        grad.log_scale.item(),
        grad.log_length.item(),
        grad.log_noise.item(),
    ];
    (0..3)
        .map(|i| {
            let fd = (nudged(i, h) - nudged(i, -h)) / (2.0 * h);
            println!(
                "  ∂/∂θ{i}: generated {:+.10}, finite differences {fd:+.10}",
                analytic[i]
            );
            (analytic[i] - fd).abs() / fd.abs().max(1.0)
        })
        .fold(0.0, f64::max)
}

fn main() {
    let n = 60;
    let x = Tensor::<f64>::rand_uniform(&[n, 1], -3.0, 3.0, 1);
    let noise = Tensor::<f64>::rand_normal(&[n, 1], 0.0, 0.1, 2);
    let y = (&x * 2.0).sin() + &x * 0.3 + noise;

    let mut kernel = Kernel {
        log_scale: Tensor::scalar(0.0),
        log_length: Tensor::scalar(0.0),
        log_noise: Tensor::scalar(-1.0),
    };
    println!(
        "start: {}, -log likelihood {:.4}",
        kernel.describe(),
        kernel.nll(&x, &y).item()
    );

    println!("gradient check at the start:");
    let error = gradient_error(&kernel, &x, &y);
    assert!(
        error < 1e-6,
        "the gradient differs from finite differences by {error:e}"
    );

    let mut adam = Adam::new(0.05);
    for step in 0..=300 {
        let (value, grad) = kernel.nll_value_and_grad(&x, &y);
        if step % 50 == 0 {
            println!(
                "step {step:3}: -log likelihood {:.4}  ({})",
                value.item(),
                kernel.describe()
            );
        }
        adam.step(&mut kernel, &grad);
    }

    println!("gradient check at the fit:");
    let error = gradient_error(&kernel, &x, &y);
    assert!(
        error < 1e-6,
        "the gradient differs from finite differences by {error:e}"
    );

    let runs = 200;
    let start = Instant::now();
    for _ in 0..runs {
        std::hint::black_box(kernel.nll_value_and_grad(&x, &y));
    }
    let per_gradient = start.elapsed() / runs;
    let start = Instant::now();
    for _ in 0..runs {
        std::hint::black_box(kernel.nll(&x, &y));
    }
    let per_value = start.elapsed() / runs;

    println!("fitted: {}", kernel.describe());
    println!(
        "time per value and gradient ({n} points): {per_gradient:?} (the likelihood alone: \
         {per_value:?})"
    );
    let sigma = kernel.log_noise.item().exp();
    assert!(
        (sigma - 0.1).abs() < 0.03,
        "the fitted noise {sigma} is not within 30% of the true 0.1"
    );
}
