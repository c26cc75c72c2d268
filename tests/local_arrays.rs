//! Local arrays and `Vec`s written by index (`let mut s = [0.0; 2]; s[0] = x * y;`,
//! `s[i] += ..`, `vec![0.0; n]`, a `Vec` of tensors made with `vec![zeros; n]`), and helpers of
//! numbers returning arrays (`-> [f64; 3]`, read with `let [a, b, c] = f(..)`), in a
//! predator–prey integration, the Lorenz system and a small recurrent model, as users write
//! them. Each is checked against derivatives worked out by hand or central differences, and the
//! dot-product test between `f_jvp` and `f_vjp`.

mod support;

use rune_ad::prelude::*;
use support::check_variants;

/// Squares accumulated into a running sum, one element overwritten with a constant, and a
/// `vec!` of copies with two elements written.
#[allow(clippy::useless_vec)]
#[differentiable]
fn running(x: [f64; 4]) -> f64 {
    let mut s = [0.0; 4];
    for i in 0..4 {
        s[i] = x[i] * x[i];
        if i > 0 {
            s[i] += s[i - 1];
        }
    }
    s[1] = 0.5;
    let mut v = vec![1.0; 3];
    v[2] = x[0] * 3.0;
    v[0] -= x[3];
    s[3] + s[1] + v[0] * v[2]
}

#[test]
fn running_sums_written_by_index() {
    let x = [1.0, 2.0, 3.0, 4.0];
    // f = Σ x_i² + 0.5 + (1 - x_3) 3 x_0; `s[1] = 0.5` cuts what `s[1]` held before.
    let want = 30.0 + 0.5 + (1.0 - 4.0) * 3.0;
    let (v, g) = running_value_and_grad(x);
    assert!((v - want).abs() < 1e-12, "{v}");
    let want_g = [
        2.0 * x[0] + 3.0 * (1.0 - x[3]),
        2.0 * x[1],
        2.0 * x[2],
        2.0 * x[3] - 3.0 * x[0],
    ];
    for i in 0..4 {
        assert!((g[i] - want_g[i]).abs() < 1e-12, "{g:?} vs {want_g:?}");
    }
    let u = [1.0, 0.5, -1.0, 2.0];
    let (_, t) = running_jvp(x, &u);
    let inner: f64 = (0..4).map(|i| want_g[i] * u[i]).sum();
    assert!((t - inner).abs() < 1e-12);
}

/// Lotka–Volterra, integrated with Heun's method: the state and the slopes in local arrays.
#[differentiable]
fn prey_after(state: [f64; 2], a: f64, b: f64, #[nodiff] steps: usize) -> f64 {
    let mut s = [state[0], state[1]];
    let dt = 0.05;
    for _ in 0..steps {
        let mut k1 = [0.0; 2];
        k1[0] = a * s[0] - s[0] * s[1];
        k1[1] = s[0] * s[1] - b * s[1];
        let mut guess = [0.0; 2];
        for j in 0..2 {
            guess[j] = s[j] + dt * k1[j];
        }
        let mut k2 = [0.0; 2];
        k2[0] = a * guess[0] - guess[0] * guess[1];
        k2[1] = guess[0] * guess[1] - b * guess[1];
        for j in 0..2 {
            s[j] += 0.5 * dt * (k1[j] + k2[j]);
        }
    }
    s[0]
}

/// The same integration on plain numbers.
fn prey_plain(state: [f64; 2], a: f64, b: f64, steps: usize) -> f64 {
    let mut s = state;
    let dt = 0.05;
    for _ in 0..steps {
        let k1 = [a * s[0] - s[0] * s[1], s[0] * s[1] - b * s[1]];
        let g = [s[0] + dt * k1[0], s[1] + dt * k1[1]];
        let k2 = [a * g[0] - g[0] * g[1], g[0] * g[1] - b * g[1]];
        for j in 0..2 {
            s[j] += 0.5 * dt * (k1[j] + k2[j]);
        }
    }
    s[0]
}

#[test]
fn a_predator_prey_integration_in_local_arrays() {
    let (state, a, b, steps) = ([1.2, 0.8], 1.1, 0.9, 30);
    let (v, (gs, ga, gb)) = prey_after_value_and_grad(state, a, b, steps);
    assert!((v - prey_plain(state, a, b, steps)).abs() < 1e-12);
    let h = 1e-6;
    let fd = |f: &dyn Fn(f64) -> f64| (f(h) - f(-h)) / (2.0 * h);
    let fd_s0 = fd(&|e| prey_plain([state[0] + e, state[1]], a, b, steps));
    let fd_s1 = fd(&|e| prey_plain([state[0], state[1] + e], a, b, steps));
    let fd_a = fd(&|e| prey_plain(state, a + e, b, steps));
    let fd_b = fd(&|e| prey_plain(state, a, b + e, steps));
    for (got, want) in [(gs[0], fd_s0), (gs[1], fd_s1), (ga, fd_a), (gb, fd_b)] {
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
    }
    // The dot-product test: <vjp(1), u> = jvp(u).
    let (u_s, u_a, u_b) = ([0.3, -0.7], 0.5, -0.25);
    let (_, t) = prey_after_jvp(state, a, b, steps, &u_s, &u_a, &u_b);
    let inner = gs[0] * u_s[0] + gs[1] * u_s[1] + ga * u_a + gb * u_b;
    assert!((t - inner).abs() < 1e-10, "{t} vs {inner}");
}

/// A recurrence whose hidden states are written into a `Vec` made of zeros, then read back in
/// reverse.
#[differentiable]
fn recurrent(w: &Tensor<f64>, #[nodiff] x: &Tensor<f64>, #[nodiff] n: usize) -> Tensor<f64> {
    let mut hs = vec![Tensor::zeros(&[1, 3]); n];
    let mut h = x.clone();
    for i in 0..n {
        h = h.matmul(w).tanh();
        hs[i] = h.clone();
        if i > 0 {
            let carried = &hs[i - 1] * 0.5;
            hs[i] += carried;
        }
    }
    let mut total = Tensor::scalar(0.0);
    for i in (0..n).rev() {
        total += hs[i].sum() * (i as f64 + 1.0);
    }
    total
}

#[test]
fn hidden_states_written_into_a_vec_of_zeros() {
    let w = Tensor::rand_normal(&[3, 3], 0.0, 0.7, 3);
    let x = Tensor::rand_normal(&[1, 3], 0.0, 1.0, 4);
    check_variants!(
        recurrent, recurrent_value_and_grad, recurrent_grad, recurrent_vjp, recurrent_jvp,
        recurrent_pullback;
        [w];
        (&w, &x, 4)
    );
    let mut hs: Vec<Tensor<f64>> = Vec::new();
    let mut h = x.clone();
    for i in 0..4 {
        h = h.matmul(&w).tanh();
        let mut s = h.clone();
        if i > 0 {
            s += &hs[i - 1] * 0.5;
        }
        hs.push(s);
    }
    let want: f64 = (0..4).map(|i| hs[i].sum().item() * (i as f64 + 1.0)).sum();
    assert!((recurrent(&w, &x, 4).item() - want).abs() < 1e-12);
}

/// An array of tensors bound with `let`, then joined and read back.
#[differentiable]
fn joined(x: &Tensor<f64>) -> Tensor<f64> {
    let parts = [x, x];
    let pair = [x.exp(), x.sin()];
    concat(&parts, 0).square().sum() + stack(&pair, 0).sum() * pair[1].mean()
}

#[test]
fn arrays_of_tensors_joined() {
    let x = Tensor::rand_normal(&[3], 0.0, 1.0, 5);
    check_variants!(
        joined, joined_value_and_grad, joined_grad, joined_vjp, joined_jvp, joined_pullback;
        [x];
        (&x)
    );
    // By hand: 2 Σ x² + (Σ eˣ + Σ sin x) mean(sin x).
    let v: Vec<f64> = x.to_vec();
    let sum = |f: &dyn Fn(f64) -> f64| v.iter().map(|&t| f(t)).sum::<f64>();
    let want = 2.0 * sum(&|t| t * t) + (sum(&f64::exp) + sum(&f64::sin)) * sum(&f64::sin) / 3.0;
    assert!((joined(&x).item() - want).abs() < 1e-12);
}

/// The Lorenz system's right-hand side: a helper of numbers returning an array.
#[differentiable]
fn lorenz(s: [f64; 3], sigma: f64, rho: f64, beta: f64) -> [f64; 3] {
    [
        sigma * (s[1] - s[0]),
        s[0] * (rho - s[2]) - s[1],
        s[0] * s[1] - beta * s[2],
    ]
}

/// Forward Euler through the helper, its result read with an array pattern.
#[differentiable]
fn lorenz_z(s0: [f64; 3], rho: f64, #[nodiff] steps: usize) -> f64 {
    let [mut x, mut y, mut z] = [s0[0], s0[1], s0[2]];
    for _ in 0..steps {
        let [dx, dy, dz] = lorenz([x, y, z], 10.0, rho, 8.0 / 3.0);
        x += 0.005 * dx;
        y += 0.005 * dy;
        z += 0.005 * dz;
    }
    z
}

#[test]
fn a_helper_returning_an_array() {
    let (s, sigma, rho, beta) = ([1.0, 2.0, 3.0], 10.0, 28.0, 8.0 / 3.0);
    assert_eq!(lorenz(s, sigma, rho, beta), [10.0, 23.0, 2.0 - 8.0]);
    // The Jacobian by hand, rows the outputs, columns s0, s1, s2, sigma, rho, beta.
    let jacobian = [
        [-sigma, sigma, 0.0, s[1] - s[0], 0.0, 0.0],
        [rho - s[2], -1.0, -s[0], 0.0, s[0], 0.0],
        [s[1], s[0], -beta, 0.0, 0.0, -s[2]],
    ];
    let ct = [0.5, -1.0, 2.0];
    let (value, (gs, g_sigma, g_rho, g_beta)) = lorenz_vjp(s, sigma, rho, beta, &ct);
    assert_eq!(value, lorenz(s, sigma, rho, beta));
    let pulled = [gs[0], gs[1], gs[2], g_sigma, g_rho, g_beta];
    for k in 0..6 {
        let want: f64 = (0..3).map(|i| ct[i] * jacobian[i][k]).sum();
        assert!((pulled[k] - want).abs() < 1e-12, "{pulled:?}");
    }
    let u = [1.0, 0.5, -0.25];
    let (value, t) = lorenz_jvp(s, sigma, rho, beta, &u, &0.0, &1.0, &0.0);
    assert_eq!(value, lorenz(s, sigma, rho, beta));
    for i in 0..3 {
        let want: f64 = (0..3).map(|k| jacobian[i][k] * u[k]).sum::<f64>() + jacobian[i][4];
        assert!((t[i] - want).abs() < 1e-12, "{t:?}");
    }
    let (_, pullback) = lorenz_pullback(s, sigma, rho, beta);
    let (gs, ..) = pullback(&[0.0, 0.0, 1.0]);
    assert_eq!(gs, [s[1], s[0], -beta]);

    let (s0, rho, steps) = ([1.0, 1.0, 1.0], 28.0, 40);
    let (v, (g_s0, g_rho)) = lorenz_z_value_and_grad(s0, rho, steps);
    assert_eq!(v, lorenz_z(s0, rho, steps));
    let h = 1e-6;
    let central = |f: &dyn Fn(f64) -> f64| (f(h) - f(-h)) / (2.0 * h);
    for k in 0..3 {
        let want = central(&|e| {
            let mut p = s0;
            p[k] += e;
            lorenz_z(p, rho, steps)
        });
        assert!(
            (g_s0[k] - want).abs() < 1e-5 * want.abs().max(1.0),
            "{k}: {} vs {want}",
            g_s0[k]
        );
    }
    let want = central(&|e| lorenz_z(s0, rho + e, steps));
    assert!((g_rho - want).abs() < 1e-5 * want.abs().max(1.0));
    let (ts, t_rho) = ([0.3, -0.2, 0.1], 0.5);
    let (_, t) = lorenz_z_jvp(s0, rho, steps, &ts, &t_rho);
    let inner = (0..3).map(|k| g_s0[k] * ts[k]).sum::<f64>() + g_rho * t_rho;
    assert!(
        (t - inner).abs() < 1e-9 * inner.abs().max(1.0),
        "{t} vs {inner}"
    );
}

/// A local array of numbers chosen from by value: the positive ones, and the largest.
#[differentiable]
fn chosen(x: [f64; 3]) -> f64 {
    let mut t = [0.0; 3];
    for i in 0..3 {
        t[i] = x[i] * x[i] - 1.0;
    }
    let positive: f64 = t.iter().filter(|v| **v > 0.0).sum();
    let largest = t.iter().max_by(|p, q| p.partial_cmp(q).unwrap()).unwrap();
    positive + largest * 2.0
}

#[test]
fn a_local_array_of_numbers_chosen_by_value() {
    // t = [0, 3, -0.75]: the positive one and the largest are both t[1] = x1² - 1.
    let x = [1.0, 2.0, 0.5];
    let (v, g) = chosen_value_and_grad(x);
    assert_eq!(v, 3.0 + 6.0);
    assert_eq!(g, [0.0, 3.0 * 2.0 * x[1], 0.0]);
}
