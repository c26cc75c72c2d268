//! Minimising the n-dimensional Rosenbrock function with first- and second-order methods.
//!
//! ```text
//! f(x) = Σᵢ 100 (xᵢ₊₁ − xᵢ²)² + (1 − xᵢ)²,   i = 0 .. n−2
//! ```
//!
//! has its minimum f = 0 at x = (1, …, 1), at the end of a long, narrow, curved valley whose
//! floor is nearly flat: the classic hard case for gradient methods. It is written once, as a
//! `#[differentiable]` function generic over its element type, with `shrink` to take the
//! shifted views `x[1:]` and `x[:-1]`. The macro then generates, among others,
//!
//! * `rosenbrock_grad(x)`, the gradient by reverse mode, and
//! * `rosenbrock_hvp(x, v)`, the gradient together with the Hessian-vector product `H(x) v`,
//!   computed forward over reverse (the reverse pass run on dual numbers `x + v·ε`), without
//!   ever forming the n × n Hessian.
//!
//! The program minimises f for n = 10 twice, from the starting point of SciPy's Newton-CG
//! tutorial (1.3, 0.7, 0.8, 1.9, 1.2) repeated:
//!
//! 1. **Gradient descent with (heavy-ball) momentum**, using only `rosenbrock_grad`, with a
//!    fixed step size and a budget of iterations;
//! 2. **Truncated Newton–CG** (Nocedal & Wright, *Numerical Optimization*, Algorithm 7.1): each
//!    Newton step solves `H p = −g` approximately by conjugate gradients, whose only access to
//!    `H` is through `rosenbrock_hvp`; the inner loop stops early once the residual is small
//!    relative to |g| (tighter as |g| shrinks, for superlinear convergence), and falls back to
//!    the steepest-descent direction if it meets negative curvature before taking any step
//!    (after that, it keeps the step it has).
//!    A backtracking (Armijo) line search makes every step decrease f.
//!
//! It prints the progress of both, then checks that Newton–CG reached |∇f| < 1e-8 at
//! x = (1, …, 1) in at least twenty times fewer iterations than momentum used (in practice
//! about 20 against about 18 000), and exits with a panic (nonzero status) if it did not.
//!
//! Run it with
//!
//! ```sh
//! cargo run --release --example rosenbrock
//! ```
//!
//! (a few seconds, nearly all of them spent by the momentum run).

use rune_ad::prelude::*;

/// The n-dimensional Rosenbrock function of a vector `x` of length n ≥ 2.
#[differentiable]
fn rosenbrock<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    let n = x.len();
    let head = x.shrink(&[(0, n - 1)]); // x[:-1]
    let tail = x.shrink(&[(1, n)]); // x[1:]
    let valley = &tail - &(&head * &head);
    let offset = -&head + T::from_f64(1.0);
    (&valley * &valley * T::from_f64(100.0) + &offset * &offset).sum()
}

/// Dimension of the problem.
const N: usize = 10;
/// Stop once |∇f| falls below this.
const GRAD_TOL: f64 = 1e-8;

/// `⟨a, b⟩`.
fn dot(a: &Tensor<f64>, b: &Tensor<f64>) -> f64 {
    (a * b).sum().item()
}

/// The Euclidean norm `|a|`.
fn norm(a: &Tensor<f64>) -> f64 {
    dot(a, a).sqrt()
}

/// The largest `|xᵢ − 1|`: the distance from the minimiser, in the max norm.
fn distance_to_ones(x: &Tensor<f64>) -> f64 {
    x.to_vec()
        .iter()
        .map(|v| (v - 1.0).abs())
        .fold(0.0, f64::max)
}

/// The starting point of SciPy's Newton-CG tutorial, (1.3, 0.7, 0.8, 1.9, 1.2), repeated to
/// length n.
fn starting_point() -> Tensor<f64> {
    let pattern = [1.3, 0.7, 0.8, 1.9, 1.2];
    let data = (0..N).map(|i| pattern[i % pattern.len()]).collect();
    Tensor::from_vec(data, &[N])
}

/// Where a run ended.
struct Outcome {
    x: Tensor<f64>,
    iterations: usize,
    gradient_evaluations: usize,
    hvp_evaluations: usize,
}

/// Heavy-ball momentum, `v ← β v − η ∇f(x)`, `x ← x + v`, for at most `budget` iterations.
fn momentum(x0: &Tensor<f64>, step: f64, beta: f64, budget: usize) -> Outcome {
    println!("gradient descent with momentum (step {step}, beta {beta})");
    println!("{:>8} {:>14} {:>12}", "iter", "f", "|grad|");
    let mut x = x0.clone();
    let mut velocity = Tensor::zeros(x.shape());
    let mut iterations = 0;
    while iterations < budget {
        let g = rosenbrock_grad(&x);
        let g_norm = norm(&g);
        if iterations.is_power_of_two() || iterations == 0 {
            println!(
                "{iterations:>8} {:>14.6e} {g_norm:>12.3e}",
                rosenbrock(&x).item()
            );
        }
        if g_norm < GRAD_TOL {
            break;
        }
        velocity = &velocity * beta - &g * step;
        x = &x + &velocity;
        iterations += 1;
    }
    let g_norm = norm(&rosenbrock_grad(&x));
    println!(
        "{iterations:>8} {:>14.6e} {g_norm:>12.3e}   (stopped)",
        rosenbrock(&x).item()
    );
    println!();
    Outcome {
        x,
        iterations,
        gradient_evaluations: iterations + 1,
        hvp_evaluations: 0,
    }
}

/// Why the conjugate-gradient loop stopped.
#[derive(Clone, Copy, Debug)]
enum CgStop {
    /// The residual fell below the tolerance.
    Converged,
    /// It met a direction `d` with `dᵀ H d <= 0`: H is not positive definite here.
    NegativeCurvature,
    /// It ran out of steps.
    MaxSteps,
}

/// An approximate solution of `H p = −g` by conjugate gradients, stopping once the residual
/// `|H p + g|` is below `tolerance`, after `max_steps` steps, or on meeting a direction of
/// non-positive curvature. Uses `H` only through Hessian-vector products `hvp(d) = H d`.
///
/// Returns the step, the number of products used and why it stopped. On non-positive
/// curvature the step is the last iterate, or the steepest-descent direction `−g` if there is
/// none yet; either way a descent direction.
fn conjugate_gradient(
    hvp: impl Fn(&Tensor<f64>) -> Tensor<f64>,
    g: &Tensor<f64>,
    tolerance: f64,
    max_steps: usize,
) -> (Tensor<f64>, usize, CgStop) {
    let mut p = Tensor::zeros(g.shape());
    let mut residual = g.clone(); // H p + g at p = 0
    let mut direction = -g;
    let mut rr = dot(&residual, &residual);
    for step in 0..max_steps {
        let hd = hvp(&direction);
        let curvature = dot(&direction, &hd);
        if curvature <= 0.0 {
            let p = if step == 0 { -g } else { p };
            return (p, step + 1, CgStop::NegativeCurvature);
        }
        let alpha = rr / curvature;
        p = &p + &direction * alpha;
        residual = &residual + &hd * alpha;
        let rr_next = dot(&residual, &residual);
        if rr_next.sqrt() < tolerance {
            return (p, step + 1, CgStop::Converged);
        }
        direction = -&residual + &direction * (rr_next / rr);
        rr = rr_next;
    }
    (p, max_steps, CgStop::MaxSteps)
}

/// Truncated Newton–CG with a backtracking line search.
fn newton_cg(x0: &Tensor<f64>, max_iterations: usize) -> Outcome {
    println!("truncated Newton-CG (Hessian only through rosenbrock_hvp)");
    println!(
        "{:>8} {:>14} {:>12} {:>9} {:>8}  CG stopped on",
        "iter", "f", "|grad|", "HVPs", "step"
    );
    let mut x = x0.clone();
    let mut gradient_evaluations = 0;
    let mut hvp_evaluations = 0;
    let mut iterations = 0;
    loop {
        let f = rosenbrock(&x).item();
        let g = rosenbrock_grad(&x);
        gradient_evaluations += 1;
        let g_norm = norm(&g);
        if g_norm < GRAD_TOL || iterations == max_iterations {
            println!("{iterations:>8} {f:>14.6e} {g_norm:>12.3e}   (stopped)");
            break;
        }

        // Forcing term: a loose solve far away, ever tighter near the minimum.
        let tolerance = g_norm.sqrt().min(0.5) * g_norm;
        let (p, products, stop) =
            conjugate_gradient(|v| rosenbrock_hvp(&x, v).1, &g, tolerance, 10 * N);
        hvp_evaluations += products;

        // Backtracking: halve the step until the Armijo condition
        // f(x + t p) <= f(x) + c t ⟨g, p⟩ holds.
        let slope = dot(&g, &p);
        assert!(slope < 0.0, "Newton-CG produced an ascent direction");
        let mut t = 1.0;
        while rosenbrock(&(&x + &p * t)).item() > f + 1e-4 * t * slope {
            t *= 0.5;
            assert!(t > 1e-20, "line search failed");
        }
        println!("{iterations:>8} {f:>14.6e} {g_norm:>12.3e} {products:>9} {t:>8.4}  {stop:?}");
        x = &x + &p * t;
        iterations += 1;
    }
    println!();
    Outcome {
        x,
        iterations,
        gradient_evaluations,
        hvp_evaluations,
    }
}

fn summary(name: &str, run: &Outcome) {
    println!(
        "{name:<22} {:>6} iterations, {:>6} gradients, {:>4} Hessian-vector products: \
         f = {:.3e}, |grad| = {:.3e}, max|x - 1| = {:.3e}",
        run.iterations,
        run.gradient_evaluations,
        run.hvp_evaluations,
        rosenbrock(&run.x).item(),
        norm(&rosenbrock_grad(&run.x)),
        distance_to_ones(&run.x),
    );
}

fn main() {
    let x0 = starting_point();
    println!(
        "n = {N}, x0 = {:?}, f(x0) = {}",
        x0.to_vec(),
        rosenbrock(&x0).item()
    );
    println!();

    let slow = momentum(&x0, 2e-4, 0.9, 20_000);
    let fast = newton_cg(&x0, 200);

    summary("momentum", &slow);
    summary("Newton-CG", &fast);

    let g_norm = norm(&rosenbrock_grad(&fast.x));
    assert!(
        g_norm < GRAD_TOL,
        "Newton-CG did not converge: |grad| = {g_norm:e}"
    );
    assert!(
        distance_to_ones(&fast.x) < 1e-8,
        "Newton-CG converged away from x = 1: {:?}",
        fast.x.to_vec()
    );
    assert!(
        fast.iterations * 20 < slow.iterations,
        "Newton-CG took {} iterations, momentum {}",
        fast.iterations,
        slow.iterations
    );
    let slow_g_norm = norm(&rosenbrock_grad(&slow.x));
    let momentum_result = if slow_g_norm < GRAD_TOL {
        format!("momentum needed {} iterations", slow.iterations)
    } else {
        format!(
            "momentum stopped after {} iterations at |grad| = {slow_g_norm:.1e}",
            slow.iterations
        )
    };
    println!(
        "Newton-CG reached |grad| < {GRAD_TOL:e} at x = 1 in {} iterations \
         ({} gradients and {} Hessian-vector products); {momentum_result}.",
        fast.iterations, fast.gradient_evaluations, fast.hvp_evaluations,
    );
}
