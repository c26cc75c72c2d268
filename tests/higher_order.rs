//! Hessian-vector products, pullbacks, custom rules and checkpoints, against closed forms and
//! finite differences.

use rune_ad::prelude::*;

#[differentiable]
fn cubic<T: Element>(x: &Tensor<T>, #[nodiff] scale: T) -> Tensor<T> {
    (x * x * x * scale).sum()
}

#[test]
fn hvp_of_a_cubic() {
    // f = s Σ x³: gradient 3 s x², Hessian diag(6 s x).
    let x = Tensor::from_vec(vec![1.0, -2.0, 0.5], &[3]);
    let v = Tensor::from_vec(vec![1.0, 1.0, 2.0], &[3]);
    let (g, hv) = cubic_hvp(&x, 2.0, &v);
    assert_eq!(g.to_vec(), vec![6.0, 24.0, 1.5]);
    assert_eq!(hv.to_vec(), vec![12.0, -24.0, 12.0]);
}

#[differentiable]
fn two_params<T: Element>(a: &Tensor<T>, b: Tensor<T>) -> Tensor<T> {
    (a * &b.exp()).sum()
}

#[test]
fn hvp_with_two_parameters() {
    // f = Σ a e^b: H = [[0, diag e^b], [diag e^b, diag a e^b]].
    let a = Tensor::from_vec(vec![2.0, 3.0], &[2]);
    let b = Tensor::from_vec(vec![0.0, 1.0], &[2]);
    let (va, vb) = (
        Tensor::from_vec(vec![1.0, 0.0], &[2]),
        Tensor::from_vec(vec![0.0, 1.0], &[2]),
    );
    let ((ga, gb), (ha, hb)) = two_params_hvp(&a, b.clone(), &va, &vb);
    let e1 = 1f64.exp();
    assert_eq!(ga.to_vec(), vec![1.0, e1]);
    assert_eq!(gb.to_vec(), vec![2.0, 3.0 * e1]);
    assert_eq!(ha.to_vec(), vec![0.0, e1]);
    assert_eq!(hb.to_vec(), vec![1.0, 3.0 * e1]);
}

#[differentiable]
fn rows<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    x.tanh() * T::from_f64(2.0)
}

#[test]
fn a_pullback_serves_many_cotangents() {
    // Rows of the Jacobian of 2 tanh(x): diag(2 (1 - tanh² x)), one cotangent at a time.
    let x = Tensor::<f64>::from_vec(vec![0.1, -0.3, 0.7], &[3]);
    let (value, pullback) = rows_pullback(&x);
    assert_eq!(value.to_vec(), rows(&x).to_vec());
    for i in 0..3 {
        let mut e = vec![0.0; 3];
        e[i] = 1.0;
        let row = pullback(&Tensor::from_vec(e, &[3]));
        for (j, r) in row.to_vec().into_iter().enumerate() {
            let t = x.to_vec()[j].tanh();
            let want = if i == j { 2.0 * (1.0 - t * t) } else { 0.0 };
            assert!((r - want).abs() < 1e-15);
        }
    }
}

/// The gradient of softplus, σ(x), as a rule: finite at ±1000 and right at 0, where the
/// stable body's `relu` and `abs` kinks would give 0 instead of ½.
fn softplus_gradient_rule(x: &Tensor<f64>, cotangent: &Tensor<f64>) -> Tensor<f64> {
    cotangent * &x.sigmoid()
}

fn softplus_tangent_rule(x: &Tensor<f64>, x_tangent: &Tensor<f64>) -> Tensor<f64> {
    x_tangent * &x.sigmoid()
}

/// `log(1 + eˣ)` without overflow.
#[differentiable(custom_vjp = softplus_gradient_rule, custom_jvp = softplus_tangent_rule)]
fn softplus(x: &Tensor<f64>) -> Tensor<f64> {
    x.relu() + (-x.abs()).exp().log1p()
}

#[differentiable]
fn softplus_sum(x: &Tensor<f64>) -> Tensor<f64> {
    softplus(x).sum() * 2.0
}

#[test]
fn a_custom_rule_replaces_the_derived_one() {
    let x = Tensor::from_vec(vec![1000.0, -1000.0, 0.0, 0.5], &[4]);
    let sigma = |v: f64| 1.0 / (1.0 + (-v).exp());
    let want: Vec<f64> = x.to_vec().iter().map(|&v| sigma(v)).collect();
    let ones = Tensor::ones(&[4]);
    let (value, g) = softplus_vjp(&x, &ones);
    assert_eq!(value.to_vec()[0], 1000.0);
    assert!((value.to_vec()[2] - 2f64.ln()).abs() < 1e-15);
    assert_eq!(g.to_vec(), want);
    // Forward mode uses the custom JVP rule.
    let (_, t) = softplus_jvp(&x, &ones);
    assert_eq!(t.to_vec(), want);
    // Callers go through the rules too.
    let g2 = softplus_sum_grad(&x);
    assert_eq!(
        g2.to_vec(),
        want.iter().map(|v| 2.0 * v).collect::<Vec<_>>()
    );
    let (_, t2) = softplus_sum_jvp(&x, &ones);
    assert!((t2.item() - 2.0 * want.iter().sum::<f64>()).abs() < 1e-12);
    assert_eq!(softplus(&x).to_vec(), value.to_vec());
}

fn pass_through(_x: &Tensor<f64>, cotangent: &Tensor<f64>) -> Tensor<f64> {
    cotangent.clone()
}

fn pass_through_tangent(_x: &Tensor<f64>, tangent: &Tensor<f64>) -> Tensor<f64> {
    tangent.clone()
}

/// A step function whose gradient is taken as the identity (straight-through estimator).
#[differentiable(custom_vjp = pass_through, custom_jvp = pass_through_tangent)]
fn binarize(x: &Tensor<f64>) -> Tensor<f64> {
    where_cond(&x.gt(0.0), &1.0, &0.0)
}

#[differentiable]
fn binarized_loss(x: &Tensor<f64>, #[nodiff] target: &Tensor<f64>) -> Tensor<f64> {
    let d = binarize(&(x * 3.0)) - target;
    (&d * &d).sum()
}

#[test]
fn a_straight_through_estimator() {
    let x = Tensor::from_vec(vec![0.5, -0.5], &[2]);
    let target = Tensor::from_vec(vec![0.0, 0.0], &[2]);
    // d = [1, 0] - 0; dL/dx = 2 d · 1 (straight through) · 3.
    assert_eq!(binarized_loss_grad(&x, &target).to_vec(), vec![6.0, 0.0]);
    assert_eq!(binarize(&x).to_vec(), vec![1.0, 0.0]);
    // Forward mode follows the same estimator: dL = 2 d · 3 dx.
    let (_, t) = binarized_loss_jvp(&x, &target, &Tensor::from_vec(vec![1.0, 1.0], &[2]));
    assert_eq!(t.item(), 6.0);
}

fn clip_cotangent(_x: &Tensor<f64>, cotangent: &Tensor<f64>) -> Tensor<f64> {
    cotangent.clamp(-1.0, 1.0)
}

fn clip_tangent(_x: &Tensor<f64>, tangent: &Tensor<f64>) -> Tensor<f64> {
    tangent.clamp(-1.0, 1.0)
}

/// The identity, whose derivative is clipped to [-1, 1] in both modes.
#[differentiable(custom_vjp = clip_cotangent, custom_jvp = clip_tangent)]
fn clip_gradient(x: &Tensor<f64>) -> Tensor<f64> {
    x.clone()
}

#[differentiable]
fn steep(x: &Tensor<f64>) -> Tensor<f64> {
    (clip_gradient(x) * 10.0).sum()
}

#[test]
fn gradient_clipping() {
    let x = Tensor::from_vec(vec![1.0, 2.0], &[2]);
    // Unclipped the gradient would be 10; the cotangent reaching x is clipped to 1.
    assert_eq!(steep_grad(&x).to_vec(), vec![1.0, 1.0]);
    let (_, t) = steep_jvp(&x, &Tensor::from_vec(vec![0.5, 3.0], &[2]));
    assert_eq!(t.item(), 10.0 * (0.5 + 1.0));
    assert_eq!(steep(&x).item(), 30.0);
    assert_eq!(clip_gradient(&x).to_vec(), x.to_vec());
}

#[differentiable(checkpoint)]
fn block(x: &Tensor<f64>) -> Tensor<f64> {
    let a = x.sin() * 1.1;
    let b = a.tanh() + x;
    b.exp() * 0.5
}

#[differentiable]
fn block_plain(x: &Tensor<f64>) -> Tensor<f64> {
    let a = x.sin() * 1.1;
    let b = a.tanh() + x;
    b.exp() * 0.5
}

#[differentiable]
fn chain_checkpointed(x: &Tensor<f64>) -> Tensor<f64> {
    let mut h = x.clone();
    for _ in 0..4 {
        h = block(&h);
    }
    h.sum()
}

#[differentiable]
fn chain_plain(x: &Tensor<f64>) -> Tensor<f64> {
    let mut h = x.clone();
    for _ in 0..4 {
        h = block_plain(&h);
    }
    h.sum()
}

#[test]
fn a_checkpoint_gives_identical_gradients() {
    let x = Tensor::from_vec(vec![0.1, -0.2, 0.05], &[3]);
    assert_eq!(
        chain_checkpointed_grad(&x).to_vec(),
        chain_plain_grad(&x).to_vec()
    );
    let (_, t1) = chain_checkpointed_jvp(&x, &Tensor::ones(&[3]));
    let (_, t2) = chain_plain_jvp(&x, &Tensor::ones(&[3]));
    assert_eq!(t1.to_vec(), t2.to_vec());
    assert_eq!(chain_checkpointed(&x).item(), chain_plain(&x).item());
    let ones = Tensor::ones(&[3]);
    assert_eq!(
        block_vjp(&x, &ones).1.to_vec(),
        block_plain_vjp(&x, &ones).1.to_vec()
    );
}

#[differentiable]
fn cube_sum<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    (x * x * x).sum()
}

#[differentiable(hvp)]
fn concrete_layer(w: &Tensor<f64>, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    x.matmul(w).tanh()
}

/// A function on `f64` tensors with `hvp`: literals, a scalar configuration and a call of
/// another concrete function with `hvp` and of a generic one.
#[differentiable(hvp)]
fn concrete_loss(w: &Tensor<f64>, #[nodiff] x: &Tensor<f64>, #[nodiff] scale: f64) -> Tensor<f64> {
    let h = concrete_layer(w, x);
    let c = cube_sum(&h);
    (h.powf(2.0) * scale).sum() + c * 0.5
}

#[test]
fn hvp_for_a_function_on_a_concrete_element_type() {
    let w = Tensor::from_vec(vec![0.3, -0.2, 0.5, 0.1], &[2, 2]);
    let x = Tensor::from_vec(vec![1.0, 0.5, -0.5, 2.0, 0.2, 0.1], &[3, 2]);
    let v = Tensor::from_vec(vec![1.0, 0.0, -1.0, 0.5], &[2, 2]);
    let (g, hv) = concrete_loss_hvp(&w, &x, 1.5, &v);
    assert_eq!(g.to_vec(), concrete_loss_grad(&w, &x, 1.5).to_vec());
    // H v against central differences of the gradient along v.
    let eps = 1e-6;
    let shifted = |s: f64| concrete_loss_grad(&(&w + &(&v * s)), &x, 1.5);
    let fd = (shifted(eps) - shifted(-eps)) / (2.0 * eps);
    for (a, b) in hv.to_vec().iter().zip(fd.to_vec()) {
        assert!((a - b).abs() < 1e-7, "{a} vs {b}");
    }
}

#[differentiable]
fn inner<T: Element>(x: &Tensor<T>, #[nodiff] a: &Tensor<T>) -> Tensor<T> {
    (x.matmul(a).tanh() * x.sum()).sum()
}

/// The derivative of `inner` along `v`, by forward mode on dual numbers inside.
#[differentiable]
fn directional<T: Element>(
    x: &Tensor<T>,
    #[nodiff] v: &Tensor<T>,
    #[nodiff] a: &Tensor<T>,
) -> Tensor<T> {
    let along = dual_of(x, v);
    let a_constant = dual_of(a, &Tensor::zeros(a.shape()));
    tangent_of(&inner(&along, &a_constant))
}

#[test]
fn reverse_over_forward() {
    let x = Tensor::<f64>::rand_normal(&[2, 3], 0.0, 0.5, 1);
    let v = Tensor::<f64>::rand_normal(&[2, 3], 0.0, 1.0, 2);
    let a = Tensor::<f64>::rand_normal(&[3, 3], 0.0, 0.5, 3);
    // The gradient of the directional derivative is the Hessian times v, which forward over
    // reverse computes independently.
    let rof = directional_grad(&x, &v, &a);
    let (_, for_) = inner_hvp(&x, &a, &v);
    for (p, q) in rof.to_vec().iter().zip(for_.to_vec()) {
        assert!((p - q).abs() < 1e-12, "{p} vs {q}");
    }
}
