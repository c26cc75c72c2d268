//! Parameter sensitivities of an ODE solution by forward-mode differentiation through a loop.
//!
//! The Lotka–Volterra predator–prey model
//!
//! ```text
//! dx/dt = α x − β x y        (x: prey)
//! dy/dt = δ x y − γ y        (y: predators)
//! ```
//!
//! is integrated with the classical fourth-order Runge–Kutta method for 1500 steps inside a
//! `#[differentiable]` function whose active argument is the parameter vector `p = [α, β, γ, δ]`.
//! The function returns four numbers: the final state `x(T), y(T)` and the time averages of
//! `x` and `y` over the trajectory.
//!
//! The macro generates `simulate_jvp`, which pushes a tangent of `p` through every step of the
//! loop alongside the values. Feeding it the one-hot tangent `e_k` gives column `k` of the
//! Jacobian `∂(outputs)/∂p_k` — the sensitivity of every output to parameter `k` — in a single
//! pass. The program checks each column against central finite differences of the plain
//! function, then computes the same Jacobian row by row with reverse mode (`simulate_vjp` with a
//! one-hot cotangent per output) and checks that the two modes agree. It panics if either check
//! fails.
//!
//! Run it with
//!
//! ```sh
//! cargo run --release --example sensitivity
//! ```

use rune_ad::prelude::*;

/// Right-hand side of the Lotka–Volterra system at state `u = [x, y]`.
#[differentiable]
fn lotka_volterra(u: &Tensor<f64>, p: &Tensor<f64>) -> Tensor<f64> {
    let x = u.shrink(&[(0, 1)]);
    let y = u.shrink(&[(1, 2)]);
    let alpha = p.shrink(&[(0, 1)]);
    let beta = p.shrink(&[(1, 2)]);
    let gamma = p.shrink(&[(2, 3)]);
    let delta = p.shrink(&[(3, 4)]);
    let xy = &x * &y;
    let dx = &alpha * &x - &beta * &xy;
    let dy = &delta * &xy - &gamma * &y;
    concat(&[&dx, &dy], 0)
}

/// One classical Runge–Kutta (RK4) step of size `h`.
#[differentiable]
fn rk4_step(u: &Tensor<f64>, p: &Tensor<f64>, #[nodiff] h: f64) -> Tensor<f64> {
    let k1 = lotka_volterra(u, p);
    let u2 = u + &k1 * (h / 2.0);
    let k2 = lotka_volterra(&u2, p);
    let u3 = u + &k2 * (h / 2.0);
    let k3 = lotka_volterra(&u3, p);
    let u4 = u + &k3 * h;
    let k4 = lotka_volterra(&u4, p);
    u + (k1 + k2 * 2.0 + k3 * 2.0 + k4) * (h / 6.0)
}

/// Integrates from `u0` for `steps` steps of size `h` and returns
/// `[x(T), y(T), mean x, mean y]`, the means taken over the `steps` states after `u0`.
#[differentiable]
fn simulate(
    p: &Tensor<f64>,
    #[nodiff] u0: &Tensor<f64>,
    #[nodiff] steps: usize,
    #[nodiff] h: f64,
) -> Tensor<f64> {
    let mut u = u0.clone();
    let mut total = u0 * 0.0;
    for _ in 0..steps {
        u = rk4_step(&u, p, h);
        total += &u;
    }
    let mean = total / (steps as f64);
    concat(&[&u, &mean], 0)
}

/// The time-averaged prey population alone: a scalar, so it has a `_grad`.
#[differentiable]
fn mean_prey(
    p: &Tensor<f64>,
    #[nodiff] u0: &Tensor<f64>,
    #[nodiff] steps: usize,
    #[nodiff] h: f64,
) -> Tensor<f64> {
    simulate(p, u0, steps, h).shrink(&[(2, 3)]).sum()
}

const PARAM_NAMES: [&str; 4] = ["alpha", "beta", "gamma", "delta"];
const OUTPUT_NAMES: [&str; 4] = ["x(T)", "y(T)", "mean x", "mean y"];

/// `e_k` of length `n`.
fn one_hot(n: usize, k: usize) -> Tensor<f64> {
    let mut v = vec![0.0; n];
    v[k] = 1.0;
    Tensor::from_vec(v, &[n])
}

/// `|a − b| / max(|a|, |b|)`, and 0 when both are 0.
fn rel_diff(a: f64, b: f64) -> f64 {
    let scale = a.abs().max(b.abs());
    if scale == 0.0 {
        0.0
    } else {
        (a - b).abs() / scale
    }
}

fn print_matrix(title: &str, columns: &[Vec<f64>]) {
    println!("{title}");
    print!("{:>8}", "");
    for name in PARAM_NAMES {
        print!("{name:>16}");
    }
    println!();
    for (i, out) in OUTPUT_NAMES.iter().enumerate() {
        print!("{out:>8}");
        for col in columns {
            print!("{:>16.9}", col[i]);
        }
        println!();
    }
    println!();
}

fn main() {
    let p = Tensor::from_vec(vec![1.1, 0.4, 0.4, 0.1], &[4]);
    let u0 = Tensor::from_vec(vec![10.0, 10.0], &[2]);
    let (steps, h) = (1500, 0.01);
    let n = p.len();

    let u = simulate(&p, &u0, steps, h).to_vec();
    println!(
        "Lotka–Volterra, p = {:?}, u0 = {:?}, {steps} RK4 steps of h = {h} (T = {})",
        p.to_vec(),
        u0.to_vec(),
        steps as f64 * h
    );
    for (name, v) in OUTPUT_NAMES.iter().zip(&u) {
        println!("  {name:>7} = {v:.6}");
    }
    println!();

    // Forward mode: one JVP per parameter gives one column of the Jacobian.
    let forward: Vec<Vec<f64>> = (0..n)
        .map(|k| {
            let (value, tangent) = simulate_jvp(&p, &u0, steps, h, &one_hot(n, k));
            assert_eq!(value.to_vec(), u, "the JVP's value is the plain function's");
            tangent.to_vec()
        })
        .collect();
    print_matrix(
        "forward mode (simulate_jvp, tangent e_k): d output / d p_k",
        &forward,
    );

    // Central finite differences of the plain function, a step of eps·|p_k| per parameter.
    //
    // Tolerance. Both sides differentiate the same discrete map (1500 RK4 steps), so the
    // integrator's own error versus the exact ODE does not enter. What remains is the finite
    // difference's error: truncation ≈ (eps·p_k)²·|f'''|/6, about 1e-12 relative here, and
    // cancellation ≈ (rounding error of f, a few 1e-15 relative after 1500 steps) / eps, about
    // 1e-9 relative with eps = 1e-6. A tolerance of 1e-6 is three orders of magnitude above both
    // while still catching any wrong term in a derivative rule, which shows up at O(1).
    let eps = 1e-6;
    let fd_tol = 1e-6;
    let finite: Vec<Vec<f64>> = (0..n)
        .map(|k| {
            let step = eps * p.to_vec()[k].abs();
            let plus = simulate(&(&p + &one_hot(n, k) * step), &u0, steps, h).to_vec();
            let minus = simulate(&(&p - &one_hot(n, k) * step), &u0, steps, h).to_vec();
            plus.iter()
                .zip(&minus)
                .map(|(a, b)| (a - b) / (2.0 * step))
                .collect()
        })
        .collect();
    print_matrix("central finite differences, step 1e-6·|p_k|", &finite);

    let max_fd = max_rel(&forward, &finite);
    println!("max relative difference, forward mode vs finite differences: {max_fd:.3e} (tolerance {fd_tol:.0e})");

    // Reverse mode: one VJP per output gives one row of the same Jacobian.
    let rows: Vec<Vec<f64>> = (0..OUTPUT_NAMES.len())
        .map(|i| {
            simulate_vjp(&p, &u0, steps, h, &one_hot(OUTPUT_NAMES.len(), i))
                .1
                .to_vec()
        })
        .collect();
    let reverse: Vec<Vec<f64>> = (0..n)
        .map(|k| rows.iter().map(|row| row[k]).collect())
        .collect();
    // Forward and reverse mode evaluate the same chain rule in two orders, so they agree to
    // rounding: 1e-10 leaves room for the reassociation of sums over 1500 steps.
    let mode_tol = 1e-10;
    let max_modes = max_rel(&forward, &reverse);
    println!("max relative difference, forward mode vs reverse mode (simulate_vjp, cotangent e_i): {max_modes:.3e} (tolerance {mode_tol:.0e})");

    // The gradient of one scalar summary, the mean prey population, is one row of the Jacobian.
    let grad = mean_prey_grad(&p, &u0, steps, h).to_vec();
    let sensitivities: Vec<f64> = forward.iter().map(|col| col[2]).collect();
    println!();
    println!("reverse mode, mean_prey_grad:      {grad:.9?}");
    println!("forward mode, row mean x of above: {sensitivities:.9?}");
    let max_grad = grad
        .iter()
        .zip(&sensitivities)
        .map(|(a, b)| rel_diff(*a, *b))
        .fold(0.0, f64::max);
    println!("max relative difference: {max_grad:.3e} (tolerance {mode_tol:.0e})");

    assert!(
        max_fd <= fd_tol,
        "forward mode disagrees with finite differences"
    );
    assert!(max_modes <= mode_tol, "forward and reverse mode disagree");
    assert!(
        max_grad <= mode_tol,
        "the gradient disagrees with the forward sensitivities"
    );
    println!("ok");
}

/// The largest elementwise [`rel_diff`] between two Jacobians stored column by column.
fn max_rel(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    a.iter()
        .flatten()
        .zip(b.iter().flatten())
        .map(|(x, y)| rel_diff(*x, *y))
        .fold(0.0, f64::max)
}
