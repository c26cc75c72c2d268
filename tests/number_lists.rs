//! Lists of numbers as parameters: `&[f64]`, `&[f32]` and `Vec<f64>` are differentiated like
//! `[f64; N]` in a function returning a number (gradient a `Vec` of the same length), unless
//! `#[nodiff]`. Before, such a parameter was silently a constant and `f_grad` returned only the
//! other parameters' gradients.
//!
//! Each program is checked against derivatives worked out by hand, central differences, the
//! dot-product test between `f_jvp` and `f_vjp`, and its twin on 0-d tensors (`fuse = false`).

use rune_ad::prelude::*;

/// Central differences of `f` along each element of `x`.
fn central(f: impl Fn(&[f64]) -> f64, x: &[f64], h: f64) -> Vec<f64> {
    (0..x.len())
        .map(|i| {
            let (mut up, mut down) = (x.to_vec(), x.to_vec());
            up[i] += h;
            down[i] -= h;
            (f(&up) - f(&down)) / (2.0 * h)
        })
        .collect()
}

#[track_caller]
fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "{a:?} against {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{a:?} against {b:?}"
        );
    }
}

/// Least squares of a polynomial whose coefficients are a slice, evaluated by Horner's scheme,
/// against data that are slices too (`#[nodiff]`).
#[differentiable]
fn poly_loss(c: &[f64], #[nodiff] xs: &[f64], #[nodiff] ys: &[f64]) -> f64 {
    let mut loss = 0.0;
    for i in 0..xs.len() {
        let mut p = 0.0;
        for k in (0..c.len()).rev() {
            p = p * xs[i] + c[k];
        }
        let r = p - ys[i];
        loss += r * r;
    }
    loss
}

#[test]
fn a_polynomial_fit_differentiates_its_coefficient_slice() {
    let (xs, ys) = ([0.0, 0.5, 1.0, 2.0], [1.0, 0.0, -1.0, 3.0]);
    let c = [0.5, -1.0, 2.0];
    // By hand: r_i = p(x_i) - y_i, dL/dc_k = sum 2 r_i x_i^k.
    let residual = |x: f64, y: f64| c[0] + c[1] * x + c[2] * x * x - y;
    let loss: f64 = xs
        .iter()
        .zip(&ys)
        .map(|(&x, &y)| residual(x, y).powi(2))
        .sum();
    let grad: Vec<f64> = (0..3)
        .map(|k| {
            xs.iter()
                .zip(&ys)
                .map(|(&x, &y)| 2.0 * residual(x, y) * x.powi(k))
                .sum()
        })
        .collect();
    let (v, g) = poly_loss_value_and_grad(&c, &xs, &ys);
    assert!((v - loss).abs() < 1e-12);
    assert_eq!(g.len(), 3);
    close(&g, &grad, 1e-12);
    close(&g, &central(|c| poly_loss(c, &xs, &ys), &c, 1e-6), 1e-6);
    // A Vec passes where the slice is taken, and the gradient has its length.
    let longer = [0.5, -1.0, 2.0, 0.0].to_vec();
    let (_, g4) = poly_loss_value_and_grad(&longer, &xs, &ys);
    assert_eq!(g4.len(), 4);
    close(&g4[..3], &grad, 1e-12);
}

/// A spring between neighbouring beads.
#[differentiable]
fn spring(a: f64, b: f64, k: f64) -> f64 {
    let d = b - a - 1.0;
    k * d * d
}

/// The squared length of a list, a helper called with the whole list.
#[differentiable]
fn sq_norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum()
}

/// A chain of beads on a line: springs between neighbours, a stiffness differentiated beside the
/// positions, and a weak pull of every bead to the origin through the helper of the whole list.
#[differentiable]
fn chain_energy(pos: &[f64], k: f64) -> f64 {
    let mut e = 0.0;
    for i in 1..pos.len() {
        e += spring(pos[i - 1], pos[i], k);
    }
    e + 0.01 * sq_norm(pos)
}

/// The same chain on 0-d tensors.
#[differentiable(fuse = false)]
fn chain_energy_tensors(pos: &[f64], k: f64) -> f64 {
    let mut e = 0.0;
    for i in 1..pos.len() {
        e += spring(pos[i - 1], pos[i], k);
    }
    e + 0.01 * sq_norm(pos)
}

#[test]
fn a_chain_of_beads_in_every_variant() {
    let pos = [0.0, 1.5, 2.25, 3.75, 4.5];
    let k = 2.0;
    let (v, (g, gk)) = chain_energy_value_and_grad(&pos, k);
    // By hand: d_i = pos[i] - pos[i-1] - 1, E = k sum d_i^2 + 0.01 sum pos^2.
    let d: Vec<f64> = (1..5).map(|i| pos[i] - pos[i - 1] - 1.0).collect();
    let energy =
        k * d.iter().map(|d| d * d).sum::<f64>() + 0.01 * pos.iter().map(|p| p * p).sum::<f64>();
    assert!((v - energy).abs() < 1e-12);
    let by_hand: Vec<f64> = (0..5)
        .map(|i| {
            let left = if i > 0 { 2.0 * k * d[i - 1] } else { 0.0 };
            let right = if i < 4 { -2.0 * k * d[i] } else { 0.0 };
            left + right + 0.02 * pos[i]
        })
        .collect();
    close(&g, &by_hand, 1e-12);
    assert!((gk - d.iter().map(|d| d * d).sum::<f64>()).abs() < 1e-12);
    close(&g, &central(|p| chain_energy(p, k), &pos, 1e-6), 1e-6);

    // The twin on 0-d tensors agrees.
    let (vt, (gt, gkt)) = chain_energy_tensors_value_and_grad(&pos, k);
    assert_eq!(v, vt);
    close(&gt, &g, 1e-12);
    assert!((gkt - gk).abs() < 1e-12);

    // The dot-product test: the jvp along (u, uk) is the gradient's inner product with it.
    let (u, uk) = ([0.3, -1.0, 0.5, 2.0, -0.25], 0.7);
    let (vj, t) = chain_energy_jvp(&pos, k, &u, &uk);
    assert_eq!(vj, v);
    let inner: f64 = g.iter().zip(&u).map(|(a, b)| a * b).sum::<f64>() + gk * uk;
    assert!((t - inner).abs() < 1e-12 * (1.0 + inner.abs()));
    let (_, tt) = chain_energy_tensors_jvp(&pos, k, &u, &uk);
    assert!((tt - t).abs() < 1e-12 * (1.0 + t.abs()));

    // vjp scales by the cotangent; the pullback runs the forward pass once.
    let (_, (g3, gk3)) = chain_energy_vjp(&pos, k, &3.0);
    close(&g3, &g.iter().map(|x| 3.0 * x).collect::<Vec<_>>(), 1e-12);
    assert!((gk3 - 3.0 * gk).abs() < 1e-12);
    let (vp, pullback) = chain_energy_pullback(&pos, k);
    assert_eq!(vp, v);
    let (gp, _) = pullback(&1.0);
    close(&gp, &g, 0.0);
}

/// An owned `Vec<f32>`: a softplus of a weighted sum.
#[differentiable]
fn softplus_of_sum(w: Vec<f32>, #[nodiff] x: &[f32]) -> f32 {
    let mut s = 0.0;
    for (wi, xi) in w.iter().zip(x.iter()) {
        s += wi * xi;
    }
    (1.0 + s.exp()).ln()
}

#[test]
fn an_owned_vec_of_f32_in_every_variant() {
    let (w, x) = (vec![0.5f32, -0.25, 1.0], [1.0f32, 2.0, -0.5]);
    let s: f32 = w.iter().zip(&x).map(|(a, b)| a * b).sum();
    let sigmoid = 1.0 / (1.0 + (-s).exp());
    let (v, g) = softplus_of_sum_value_and_grad(w.clone(), &x);
    assert!((v - (1.0 + s.exp()).ln()).abs() < 1e-6);
    for i in 0..3 {
        assert!((g[i] - sigmoid * x[i]).abs() < 1e-6, "{g:?}");
    }
    let u = vec![1.0f32, 1.0, 1.0];
    let (_, t) = softplus_of_sum_jvp(w.clone(), &x, &u);
    assert!((t - g.iter().sum::<f32>()).abs() < 1e-6);
    // A parameter left without a tangent moves with zero.
    let (_, t0) = softplus_of_sum_jvp(w, &x, &vec![0.0; 3]);
    assert_eq!(t0, 0.0);
}

#[test]
#[should_panic(expected = "a tangent of 2 elements for a list parameter of 3 elements")]
fn a_tangent_of_another_length_is_refused() {
    let _ = sq_norm_jvp(&[1.0, 2.0, 3.0], &[1.0, 0.0]);
}

/// The chain's energy, checkpointed: its callers keep the positions and rerun it in their
/// backward pass. `checkpoint` keeps owned copies of the parameters, and a slice's is a `Vec`
/// (it used to clone the referent, which a slice is not).
#[differentiable(checkpoint)]
fn chain_energy_checkpointed(pos: &[f64], k: f64) -> f64 {
    chain_energy(pos, k)
}

/// Two checkpointed energies of the same positions, multiplied.
#[differentiable]
fn two_stiffnesses(pos: &[f64], k: f64) -> f64 {
    chain_energy_checkpointed(pos, k) * chain_energy_checkpointed(pos, k * k)
}

#[test]
fn a_checkpointed_function_of_a_slice() {
    let (pos, k) = ([0.0, 1.5, 2.25, 3.75, 4.5], 2.0);
    let (e1, (g1, gk1)) = chain_energy_value_and_grad(&pos, k);
    let (e2, (g2, gk2)) = chain_energy_value_and_grad(&pos, k * k);
    // By the product rule, from the unchecked function's own derivatives.
    let (v, (g, gk)) = two_stiffnesses_value_and_grad(&pos, k);
    assert!((v - e1 * e2).abs() < 1e-12);
    let by_hand: Vec<f64> = (0..5).map(|i| g1[i] * e2 + e1 * g2[i]).collect();
    close(&g, &by_hand, 1e-12);
    assert!((gk - (gk1 * e2 + e1 * gk2 * 2.0 * k)).abs() < 1e-10);
    close(&g, &central(|p| two_stiffnesses(p, k), &pos, 1e-6), 1e-6);
    let (_, t) = two_stiffnesses_jvp(&pos, k, &[1.0, 0.0, 0.0, 0.0, -1.0], &0.5);
    assert!((t - (g[0] - g[4] + 0.5 * gk)).abs() < 1e-10);
}
