//! Gradients inside differentiated functions: `g_grad(..)` called in a `#[differentiable]` body
//! is differentiated through its Hessian (`g_hvp`, forward over reverse). A WGAN-GP gradient
//! penalty, one MAML step, third derivatives and mixed partials, each checked in every variant
//! against finite differences and the dot-product test (`support::check_variants!`), and against
//! the derivatives written out by hand.

mod support;

use rune_ad::prelude::*;
use support::check_variants;

/// A critic: `v · tanh(W x)` summed over the batch, with its weights as tensors.
#[differentiable(hvp)]
fn critic(w: &Tensor<f64>, v: &Tensor<f64>, x: &Tensor<f64>) -> Tensor<f64> {
    let mut h = x.matmul(w);
    for _ in 0..2 {
        h = h.tanh() + &h * 0.1;
    }
    h.matmul(v).sum()
}

/// WGAN-GP: the critic's score plus `λ (‖∇ₓ critic‖ − 1)²`, differentiated with respect to the
/// critic's weights (the gradient penalty's gradient is a second derivative).
#[differentiable]
fn critic_loss(w: &Tensor<f64>, v: &Tensor<f64>, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let (_, _, gx) = critic_grad(w, v, x);
    let norm = (gx.square().sum() + 1e-12).sqrt();
    critic(w, v, x) + (norm - 1.0).square() * 10.0
}

#[test]
fn a_gradient_penalty_has_every_variant() {
    let w = Tensor::rand_normal(&[3, 4], 0.0, 0.7, 1);
    let v = Tensor::rand_normal(&[4, 1], 0.0, 0.7, 2);
    let x = Tensor::rand_normal(&[5, 3], 0.0, 1.0, 3);
    check_variants!(
        critic_loss,
        critic_loss_value_and_grad,
        critic_loss_grad,
        critic_loss_vjp,
        critic_loss_jvp,
        critic_loss_pullback;
        [w, v];
        (&w, &v, &x)
    );
}

/// Least squares, `½ mean((X w − y)²)`, generic over the element type.
#[differentiable]
fn least_squares<T: Element>(w: &Tensor<T>, x: &Tensor<T>, y: &Tensor<T>) -> Tensor<T> {
    let r = x.matmul(w) - y;
    (&r * &r).mean() * T::from_f64(0.5)
}

/// MAML: one step of gradient descent on the training set, then the loss on the test set.
#[differentiable]
fn maml<T: Element>(
    w: &Tensor<T>,
    #[nodiff] train: &(Tensor<T>, Tensor<T>),
    #[nodiff] test: &(Tensor<T>, Tensor<T>),
) -> Tensor<T> {
    let (gw, _, _) = least_squares_grad(w, &train.0, &train.1);
    let adapted = w - gw * T::from_f64(0.3);
    least_squares(&adapted, &test.0, &test.1)
}

/// `least_squares` in its weights alone, the data fixed.
#[differentiable]
fn fit<T: Element>(w: &Tensor<T>, #[nodiff] x: &Tensor<T>, #[nodiff] y: &Tensor<T>) -> Tensor<T> {
    least_squares(w, x, y)
}

/// A step whose length grows with the training loss, `w' = w − α L(w) ∇L(w)`, scored on the
/// test set: the loss and its gradient from one `value_and_grad` call, differentiated through.
#[differentiable]
fn loss_scaled_step<T: Element>(
    w: &Tensor<T>,
    #[nodiff] train: &(Tensor<T>, Tensor<T>),
    #[nodiff] test: &(Tensor<T>, Tensor<T>),
) -> Tensor<T> {
    let (loss, g) = fit_value_and_grad(w, &train.0, &train.1);
    let adapted = w - g * loss * T::from_f64(0.3);
    least_squares(&adapted, &test.0, &test.1)
}

#[test]
fn a_value_and_grad_inside_a_loss_is_differentiated() {
    let w = Tensor::rand_normal(&[3, 1], 0.0, 1.0, 21);
    let train = (
        Tensor::rand_normal(&[6, 3], 0.0, 1.0, 22),
        Tensor::rand_normal(&[6, 1], 0.0, 1.0, 23),
    );
    let test = (
        Tensor::rand_normal(&[4, 3], 0.0, 1.0, 24),
        Tensor::rand_normal(&[4, 1], 0.0, 1.0, 25),
    );
    check_variants!(
        loss_scaled_step,
        loss_scaled_step_value_and_grad,
        loss_scaled_step_grad,
        loss_scaled_step_vjp,
        loss_scaled_step_jvp,
        loss_scaled_step_pullback;
        [w];
        (&w, &train, &test)
    );
    // By hand: with L, ∇L = Xᵀ(X w − y)/n and H = XᵀX/n on the training set, w' = w − α L ∇L
    // has the Jacobian I − α (∇L ∇Lᵀ + L H), symmetric, so the gradient is
    // t − α (∇L (∇L · t) + L H t) for t = ∇L_test(w').
    let (xs, ys) = &train;
    let (xt, yt) = &test;
    let n = |x: &Tensor<f64>| x.shape()[0] as f64;
    let r = xs.matmul(&w) - ys;
    let loss = r.square().mean().item() * 0.5;
    let g = xs.t().matmul(&r) / n(xs);
    let adapted = &w - &(&g * (0.3 * loss));
    let t = xt.t().matmul(&(xt.matmul(&adapted) - yt)) / n(xt);
    let gt = (&g * &t).sum().item();
    let ht = xs.t().matmul(&xs.matmul(&t)) / n(xs);
    let by_hand = &t - &((&g * gt + &ht * loss) * 0.3);
    let got = loss_scaled_step_grad(&w, &train, &test);
    for (g, h) in got.to_vec().iter().zip(by_hand.to_vec()) {
        assert!((g - h).abs() <= 1e-12 * h.abs().max(1.0), "{g} against {h}");
    }
    // Forward mode: the slope along a direction is the gradient's inner product with it.
    let v = Tensor::rand_normal(&[3, 1], 0.0, 1.0, 26);
    let (_, slope) = loss_scaled_step_jvp(&w, &train, &test, &v);
    let expected = (&by_hand * &v).sum().item();
    assert!((slope.item() - expected).abs() <= 1e-12 * expected.abs().max(1.0));
    // The same in f32.
    let cast = |(a, b): &(Tensor<f64>, Tensor<f64>)| (a.cast::<f32>(), b.cast::<f32>());
    let got32 = loss_scaled_step_grad(&w.cast::<f32>(), &cast(&train), &cast(&test));
    for (g, h) in got32.to_vec().iter().zip(by_hand.to_vec()) {
        assert!(
            (f64::from(*g) - h).abs() <= 1e-4 * h.abs().max(1.0),
            "{g} against {h}"
        );
    }
    // Third order: the Hessian along `v` against central differences of the gradient.
    let (_, hv) = loss_scaled_step_hvp(&w, &train, &test, &v);
    let eps = 1e-5;
    let at = |d: f64| loss_scaled_step_grad(&(&w + &(&v * d)), &train, &test);
    let fd = (at(eps) - at(-eps)) / (2.0 * eps);
    for (h, f) in hv.to_vec().iter().zip(fd.to_vec()) {
        assert!((h - f).abs() <= 1e-7 * f.abs().max(1.0), "{h} against {f}");
    }
}

/// `least_squares` with a bias beside the weights: two differentiated parameters.
#[differentiable]
fn fit_biased<T: Element>(
    w: &Tensor<T>,
    b: &Tensor<T>,
    #[nodiff] x: &Tensor<T>,
    #[nodiff] y: &Tensor<T>,
) -> Tensor<T> {
    let r = x.matmul(w) + b - y;
    (&r * &r).mean() * T::from_f64(0.5)
}

/// `loss_scaled_step` of both: the loss and the two gradients from one call, bound by a nested
/// tuple pattern.
#[differentiable]
fn biased_loss_scaled_step<T: Element>(
    w: &Tensor<T>,
    b: &Tensor<T>,
    #[nodiff] train: &(Tensor<T>, Tensor<T>),
    #[nodiff] test: &(Tensor<T>, Tensor<T>),
) -> Tensor<T> {
    let (loss, (gw, gb)) = fit_biased_value_and_grad(w, b, &train.0, &train.1);
    let scale = loss * T::from_f64(0.3);
    let w2 = w - gw * &scale;
    let b2 = b - gb * &scale;
    fit_biased(&w2, &b2, &test.0, &test.1)
}

#[test]
fn a_value_and_grad_of_two_parameters_inside_a_loss() {
    let (w, b) = (
        Tensor::rand_normal(&[3, 1], 0.0, 1.0, 71),
        Tensor::rand_normal(&[1], 0.0, 1.0, 72),
    );
    let train = (
        Tensor::rand_normal(&[6, 3], 0.0, 1.0, 73),
        Tensor::rand_normal(&[6, 1], 0.0, 1.0, 74),
    );
    let test = (
        Tensor::rand_normal(&[4, 3], 0.0, 1.0, 75),
        Tensor::rand_normal(&[4, 1], 0.0, 1.0, 76),
    );
    check_variants!(
        biased_loss_scaled_step,
        biased_loss_scaled_step_value_and_grad,
        biased_loss_scaled_step_grad,
        biased_loss_scaled_step_vjp,
        biased_loss_scaled_step_jvp,
        biased_loss_scaled_step_pullback;
        [w, b];
        (&w, &b, &train, &test)
    );
    // The bias is a weight on a column of ones: the one-parameter step on the augmented data,
    // checked by hand above, gives the same gradient.
    let augment = |(x, y): &(Tensor<f64>, Tensor<f64>)| {
        let ones = Tensor::ones(&[x.shape()[0], 1]);
        (concat(&[x, &ones], 1), y.clone())
    };
    let wb = concat(&[&w, &b.reshape(&[1, 1])], 0);
    let expected = loss_scaled_step_grad(&wb, &augment(&train), &augment(&test)).to_vec();
    let (gw, gb) = biased_loss_scaled_step_grad(&w, &b, &train, &test);
    let mut got = gw.to_vec();
    got.extend(gb.to_vec());
    for (g, e) in got.iter().zip(&expected) {
        assert!((g - e).abs() <= 1e-12 * e.abs().max(1.0), "{g} against {e}");
    }
    // Third order along both parameters against central differences of the gradient.
    let (v, u) = (
        Tensor::rand_normal(&[3, 1], 0.0, 1.0, 77),
        Tensor::rand_normal(&[1], 0.0, 1.0, 78),
    );
    let (_, (hw, hb)) = biased_loss_scaled_step_hvp(&w, &b, &train, &test, &v, &u);
    let eps = 1e-5;
    let at = |d: f64| {
        let (gw, gb) =
            biased_loss_scaled_step_grad(&(&w + &(&v * d)), &(&b + &(&u * d)), &train, &test);
        let mut all = gw.to_vec();
        all.extend(gb.to_vec());
        all
    };
    let (plus, minus) = (at(eps), at(-eps));
    let mut hv = hw.to_vec();
    hv.extend(hb.to_vec());
    for (i, h) in hv.iter().enumerate() {
        let f = (plus[i] - minus[i]) / (2.0 * eps);
        assert!((h - f).abs() <= 1e-7 * f.abs().max(1.0), "{h} against {f}");
    }
}

/// A vector field `tanh(A x) ⊙ x`, generic over its element type.
#[differentiable]
fn swirl<T: Element>(x: &Tensor<T>, #[nodiff] a: &Tensor<T>) -> Tensor<T> {
    a.matmul(x).tanh() * x
}

/// A penalty on the field's Jacobian transposed along `c`, plus the field along `c`: a VJP
/// inside a differentiated function, in both its point and its cotangent.
#[differentiable]
fn vjp_penalty<T: Element>(x: &Tensor<T>, c: &Tensor<T>, #[nodiff] a: &Tensor<T>) -> Tensor<T> {
    let (y, pulled) = swirl_vjp(x, a, c);
    pulled.square().sum() + (y * c).sum()
}

#[test]
fn a_vjp_inside_a_loss_is_differentiated() {
    let x = Tensor::rand_normal(&[4], 0.0, 1.0, 31);
    let c = Tensor::rand_normal(&[4], 0.0, 1.0, 32);
    let a = Tensor::rand_normal(&[4, 4], 0.0, 0.6, 33);
    check_variants!(
        vjp_penalty,
        vjp_penalty_value_and_grad,
        vjp_penalty_grad,
        vjp_penalty_vjp,
        vjp_penalty_jvp,
        vjp_penalty_pullback;
        [x, c];
        (&x, &c, &a)
    );
    // By hand: J = diag(t) + diag(x ⊙ (1 − t²)) A for t = tanh(A x), so Jᵀ c = t ⊙ c +
    // Aᵀ (x ⊙ (1 − t²) ⊙ c), and the value is ‖Jᵀ c‖² + (t ⊙ x) · c.
    let t = a.matmul(&x).tanh();
    let pulled = &t * &c + a.t().matmul(&(&x * &(1.0 - t.square()) * &c));
    let by_hand = pulled.square().sum().item() + (&t * &x * &c).sum().item();
    let got = vjp_penalty(&x, &c, &a).item();
    assert!((got - by_hand).abs() <= 1e-12 * by_hand.abs().max(1.0));
    // The gradient in `c` by hand: the value is quadratic in c, 2 J Jᵀ c + t ⊙ x.
    let jjt_c = {
        let d = &x * &(1.0 - t.square());
        &t * &pulled + &d * &a.matmul(&pulled)
    };
    let (_, gc) = vjp_penalty_grad(&x, &c, &a);
    let expected = jjt_c * 2.0 + &t * &x;
    for (g, h) in gc.to_vec().iter().zip(expected.to_vec()) {
        assert!((g - h).abs() <= 1e-12 * h.abs().max(1.0), "{g} against {h}");
    }
    let (_, gc32) = vjp_penalty_grad(&x.cast::<f32>(), &c.cast::<f32>(), &a.cast::<f32>());
    for (g, h) in gc32.to_vec().iter().zip(expected.to_vec()) {
        assert!(
            (f64::from(*g) - h).abs() <= 1e-4 * h.abs().max(1.0),
            "{g} against {h}"
        );
    }
    // Third order: the Hessian along (u, w) against central differences of the gradient.
    let (u, w) = (
        Tensor::rand_normal(&[4], 0.0, 1.0, 34),
        Tensor::rand_normal(&[4], 0.0, 1.0, 35),
    );
    let (_, (hx, hc)) = vjp_penalty_hvp(&x, &c, &a, &u, &w);
    let eps = 1e-5;
    let at = |d: f64| vjp_penalty_grad(&(&x + &(&u * d)), &(&c + &(&w * d)), &a);
    let ((px, pc), (mx, mc)) = (at(eps), at(-eps));
    for (h, (p, m)) in [(hx, (px, mx)), (hc, (pc, mc))] {
        let fd = (p - m) / (2.0 * eps);
        for (h, f) in h.to_vec().iter().zip(fd.to_vec()) {
            assert!((h - f).abs() <= 1e-7 * f.abs().max(1.0), "{h} against {f}");
        }
    }
}

/// `swirl` on `f64` under `hvp`: its `swirl_f64_vjp` inside a loss runs on its dual-number twin.
#[differentiable(hvp)]
fn swirl_f64(x: &Tensor<f64>, #[nodiff] a: &Tensor<f64>) -> Tensor<f64> {
    a.matmul(x).tanh() * x
}

#[differentiable]
fn vjp_penalty_f64(x: &Tensor<f64>, c: &Tensor<f64>, #[nodiff] a: &Tensor<f64>) -> Tensor<f64> {
    let (y, pulled) = swirl_f64_vjp(x, a, c);
    pulled.square().sum() + (y * c).sum()
}

#[test]
fn a_vjp_of_a_concrete_function_inside_a_loss() {
    let x = Tensor::rand_normal(&[4], 0.0, 1.0, 41);
    let c = Tensor::rand_normal(&[4], 0.0, 1.0, 42);
    let a = Tensor::rand_normal(&[4, 4], 0.0, 0.6, 43);
    check_variants!(
        vjp_penalty_f64,
        vjp_penalty_f64_value_and_grad,
        vjp_penalty_f64_grad,
        vjp_penalty_f64_vjp,
        vjp_penalty_f64_jvp,
        vjp_penalty_f64_pullback;
        [x, c];
        (&x, &c, &a)
    );
    // The generic function's derivatives, checked by hand above.
    let (gx, gc) = vjp_penalty_f64_grad(&x, &c, &a);
    let (ex, ec) = vjp_penalty_grad(&x, &c, &a);
    for (g, e) in [(gx, ex), (gc, ec)] {
        for (g, e) in g.to_vec().iter().zip(e.to_vec()) {
            assert!((g - e).abs() <= 1e-12 * e.abs().max(1.0), "{g} against {e}");
        }
    }
}

/// `vjp_penalty` through a pullback, called twice: `pb(&c)` is `swirl_vjp(x, a, &c)`, so the
/// last term, linear in the cotangent, is zero with a zero derivative.
#[differentiable]
fn pullback_penalty<T: Element>(
    x: &Tensor<T>,
    c: &Tensor<T>,
    #[nodiff] a: &Tensor<T>,
) -> Tensor<T> {
    let (y, pb) = swirl_pullback(x, a);
    let pulled = pb(c);
    let twice = pb(&(c * T::from_f64(2.0)));
    pulled.square().sum() + (y * c).sum() + (twice - &pulled * T::from_f64(2.0)).square().sum()
}

#[test]
fn a_pullback_inside_a_loss_is_a_vjp() {
    let x = Tensor::rand_normal(&[4], 0.0, 1.0, 36);
    let c = Tensor::rand_normal(&[4], 0.0, 1.0, 37);
    let a = Tensor::rand_normal(&[4, 4], 0.0, 0.6, 38);
    check_variants!(
        pullback_penalty,
        pullback_penalty_value_and_grad,
        pullback_penalty_grad,
        pullback_penalty_vjp,
        pullback_penalty_jvp,
        pullback_penalty_pullback;
        [x, c];
        (&x, &c, &a)
    );
    // The same derivatives as `vjp_penalty`'s, checked by hand above.
    let (gx, gc) = pullback_penalty_grad(&x, &c, &a);
    let (ex, ec) = vjp_penalty_grad(&x, &c, &a);
    for (g, e) in [(gx, ex), (gc, ec)] {
        for (g, e) in g.to_vec().iter().zip(e.to_vec()) {
            assert!((g - e).abs() <= 1e-12 * e.abs().max(1.0), "{g} against {e}");
        }
    }
    let (_, (hx, hc)) = pullback_penalty_hvp(&x, &c, &a, &c, &x);
    let (_, (kx, kc)) = vjp_penalty_hvp(&x, &c, &a, &c, &x);
    for (h, k) in [(hx, kx), (hc, kc)] {
        for (h, k) in h.to_vec().iter().zip(k.to_vec()) {
            assert!((h - k).abs() <= 1e-10 * k.abs().max(1.0), "{h} against {k}");
        }
    }
}

/// The curvature of `quartic` along `v` as a penalty: `‖H v‖² + ∇f · v`, a Hessian-vector
/// product inside a differentiated function.
#[differentiable]
fn curvature_penalty<T: Element>(x: &Tensor<T>, v: &Tensor<T>) -> Tensor<T> {
    let (g, hv) = quartic_hvp(x, v);
    hv.square().sum() + (g * v).sum()
}

#[test]
fn a_hessian_vector_product_inside_a_loss_is_differentiated() {
    let x = Tensor::from_vec(vec![0.5, -1.0, 1.5], &[3]);
    let v = Tensor::from_vec(vec![2.0, 0.5, -1.0], &[3]);
    check_variants!(
        curvature_penalty,
        curvature_penalty_value_and_grad,
        curvature_penalty_grad,
        curvature_penalty_vjp,
        curvature_penalty_jvp,
        curvature_penalty_pullback;
        [x, v];
        (&x, &v)
    );
    // By hand, for f = Σ x⁴: ∇f = 4x³, H v = 12x² ⊙ v, so the value is Σ 144 x⁴ v² + 4 x³ v,
    // its gradient in x is 576 x³ v² + 12 x² v, and in v, 288 x⁴ v + 4 x³.
    let (value, (gx, gv)) = curvature_penalty_value_and_grad(&x, &v);
    let (gx32, _) = curvature_penalty_grad(&x.cast::<f32>(), &v.cast::<f32>());
    let (xs, vs) = (x.to_vec(), v.to_vec());
    let by_hand: f64 = xs
        .iter()
        .zip(&vs)
        .map(|(x, v)| 144.0 * x.powi(4) * v * v + 4.0 * x.powi(3) * v)
        .sum();
    assert!((value.item() - by_hand).abs() <= 1e-12 * by_hand.abs());
    for i in 0..3 {
        let (x, v) = (xs[i], vs[i]);
        let (ex, ev) = (
            576.0 * x.powi(3) * v * v + 12.0 * x * x * v,
            288.0 * x.powi(4) * v + 4.0 * x.powi(3),
        );
        assert!((gx.to_vec()[i] - ex).abs() <= 1e-12 * ex.abs().max(1.0));
        assert!((gv.to_vec()[i] - ev).abs() <= 1e-12 * ev.abs().max(1.0));
        assert!((f64::from(gx32.to_vec()[i]) - ex).abs() <= 1e-4 * ex.abs().max(1.0));
    }
    // Fourth order: the Hessian of the penalty along (u, w), by hand from the gradient above:
    // in x, (1728 x² v² + 24 x v) u + (1152 x³ v + 12 x²) w; in v, (1152 x³ v + 12 x²) u + 288 x⁴ w.
    let (u, w) = (vec![1.0, -0.5, 0.25], vec![0.5, 1.0, -2.0]);
    let (_, (hx, hv)) = curvature_penalty_hvp(
        &x,
        &v,
        &Tensor::from_vec(u.clone(), &[3]),
        &Tensor::from_vec(w.clone(), &[3]),
    );
    for i in 0..3 {
        let (x, v) = (xs[i], vs[i]);
        let ex = (1728.0 * x * x * v * v + 24.0 * x * v) * u[i]
            + (1152.0 * x.powi(3) * v + 12.0 * x * x) * w[i];
        let ev = (1152.0 * x.powi(3) * v + 12.0 * x * x) * u[i] + 288.0 * x.powi(4) * w[i];
        assert!(
            (hx.to_vec()[i] - ex).abs() <= 1e-10 * ex.abs().max(1.0),
            "{i}"
        );
        assert!(
            (hv.to_vec()[i] - ev).abs() <= 1e-10 * ev.abs().max(1.0),
            "{i}"
        );
    }
}

#[test]
fn a_maml_meta_gradient_is_the_one_by_hand() {
    let w = Tensor::rand_normal(&[3, 1], 0.0, 1.0, 11);
    let train = (
        Tensor::rand_normal(&[6, 3], 0.0, 1.0, 12),
        Tensor::rand_normal(&[6, 1], 0.0, 1.0, 13),
    );
    let test = (
        Tensor::rand_normal(&[4, 3], 0.0, 1.0, 14),
        Tensor::rand_normal(&[4, 1], 0.0, 1.0, 15),
    );
    check_variants!(
        maml,
        maml_value_and_grad,
        maml_grad,
        maml_vjp,
        maml_jvp,
        maml_pullback;
        [w];
        (&w, &train, &test)
    );
    // By hand: ∇L(w) = Xᵀ(X w − y)/n and H = XᵀX/n, so w' = w − α ∇L_train(w) and the
    // meta-gradient is (I − α H_train) ∇L_test(w').
    let (xs, ys) = &train;
    let (xt, yt) = &test;
    let n = |x: &Tensor<f64>| x.shape()[0] as f64;
    let adapted = &w - &(xs.t().matmul(&(xs.matmul(&w) - ys)) * (0.3 / n(xs)));
    let outer = xt.t().matmul(&(xt.matmul(&adapted) - yt)) / n(xt);
    let by_hand = &outer - &(xs.t().matmul(&xs.matmul(&outer)) * (0.3 / n(xs)));
    let got = maml_grad(&w, &train, &test);
    for (g, h) in got.to_vec().iter().zip(by_hand.to_vec()) {
        assert!((g - h).abs() <= 1e-12 * h.abs().max(1.0), "{g} against {h}");
    }
    // The same in f32.
    let w32 = w.cast::<f32>();
    let cast = |(a, b): &(Tensor<f64>, Tensor<f64>)| (a.cast::<f32>(), b.cast::<f32>());
    let got32 = maml_grad(&w32, &cast(&train), &cast(&test));
    for (g, h) in got32.to_vec().iter().zip(by_hand.to_vec()) {
        assert!(
            (f64::from(*g) - h).abs() <= 1e-4 * h.abs().max(1.0),
            "{g} against {h}"
        );
    }
}

#[differentiable]
fn quartic<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    (x * x * x * x).sum()
}

/// `Σ ∂/∂x Σ x⁴ = Σ 4x³`: a gradient of a gradient.
#[differentiable]
fn quartic_slope<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    quartic_grad(x).sum()
}

/// `Σ 12x²`: a gradient of a gradient of a gradient.
#[differentiable]
fn quartic_curvature<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    quartic_slope_grad(x).sum()
}

#[test]
fn the_third_derivative_of_x4_is_24x() {
    let x = Tensor::from_vec(vec![2.0, -1.0, 0.5], &[3]);
    // d/dx Σ 4x³ = 12x², d/dx Σ 12x² = 24x.
    assert_eq!(quartic_slope_grad(&x).to_vec(), [48.0, 12.0, 3.0]);
    assert_eq!(quartic_curvature_grad(&x).to_vec(), [48.0, -24.0, 12.0]);
    // Forward mode through both nested gradients, and f_hvp (the fourth derivative, 24).
    let (value, tangent) = quartic_curvature_jvp(&x, &Tensor::from_vec(vec![1.0, 0.0, 0.0], &[3]));
    assert_eq!(value.item(), 12.0 * (4.0 + 1.0 + 0.25));
    assert_eq!(tangent.item(), 48.0);
    let (_, fourth) = quartic_curvature_hvp(&x, &Tensor::from_vec(vec![0.0, 1.0, 0.0], &[3]));
    assert_eq!(fourth.to_vec(), [0.0, 24.0, 0.0]);
    check_variants!(
        quartic_curvature,
        quartic_curvature_value_and_grad,
        quartic_curvature_grad,
        quartic_curvature_vjp,
        quartic_curvature_jvp,
        quartic_curvature_pullback;
        [x];
        (&x)
    );
}

/// A function of two tensors with every kind of mixed term.
#[differentiable]
fn coupled<T: Element>(a: &Tensor<T>, b: &Tensor<T>) -> Tensor<T> {
    (a * b).sin().sum() + (a * a * b).sum() + b.exp().sum()
}

/// `Σ ∂coupled/∂a`, differentiated with respect to `b`: the mixed partials.
#[differentiable]
fn slope_in_a<T: Element>(#[nodiff] a: &Tensor<T>, b: &Tensor<T>) -> Tensor<T> {
    let (ga, _) = coupled_grad(a, b);
    ga.sum()
}

#[test]
fn mixed_partials_agree_with_differences_of_differences() {
    let a = Tensor::from_vec(vec![0.3, -0.8], &[2]);
    let b = Tensor::from_vec(vec![1.1, 0.4], &[2]);
    let got = slope_in_a_grad(&a, &b).to_vec();
    // ∂²coupled/∂aᵢ∂bᵢ by central differences of central differences.
    let h = 1e-4;
    let f = |a: &[f64], b: &[f64]| {
        coupled(
            &Tensor::from_vec(a.to_vec(), &[2]),
            &Tensor::from_vec(b.to_vec(), &[2]),
        )
        .item()
    };
    for i in 0..2 {
        let shifted = |da: f64, db: f64| {
            let mut a2 = a.to_vec();
            let mut b2 = b.to_vec();
            a2[i] += da;
            b2[i] += db;
            f(&a2, &b2)
        };
        let fd =
            (shifted(h, h) - shifted(h, -h) - shifted(-h, h) + shifted(-h, -h)) / (4.0 * h * h);
        // By hand: ∂²/∂aᵢ∂bᵢ = cos(aᵢbᵢ) − aᵢbᵢ sin(aᵢbᵢ) + 2aᵢ.
        let (ai, bi) = (a.to_vec()[i], b.to_vec()[i]);
        let by_hand = (ai * bi).cos() - ai * bi * (ai * bi).sin() + 2.0 * ai;
        assert!(
            (got[i] - by_hand).abs() < 1e-12,
            "{} against {by_hand}",
            got[i]
        );
        assert!((got[i] - fd).abs() < 1e-6, "{} against {fd}", got[i]);
    }
}

/// The gradient of [`coupled`] in `a` as a function of its own, whose Jacobian is a Hessian.
#[differentiable]
fn coupled_slope<T: Element>(a: &Tensor<T>, #[nodiff] b: &Tensor<T>) -> Tensor<T> {
    let (ga, _) = coupled_grad(a, b);
    ga
}

/// `coupled` in `a` alone, for its Hessian by forward over reverse.
#[differentiable]
fn coupled_in_a<T: Element>(a: &Tensor<T>, #[nodiff] b: &Tensor<T>) -> Tensor<T> {
    coupled(a, b)
}

#[test]
fn a_hessian_by_reverse_mode_of_the_gradient() {
    let a = Tensor::from_vec(vec![0.3f64, -0.8, 0.5], &[3]);
    let b = Tensor::from_vec(vec![1.1f64, 0.4, -0.6], &[3]);
    let reverse = jacrev(|a, w| coupled_slope_vjp(a, &b, w).1, &a, &[3]);
    let forward = jacfwd(|a, v| coupled_slope_jvp(a, &b, v).1, &a);
    let over_reverse = hessian(|a, v| coupled_in_a_hvp(a, &b, v).1, &a);
    // By hand: diagonal, ∂²/∂aᵢ² = −bᵢ² sin(aᵢbᵢ) + 2bᵢ.
    let mut by_hand = vec![0.0f64; 9];
    for i in 0..3 {
        let (ai, bi) = (a.to_vec()[i], b.to_vec()[i]);
        by_hand[i * 4] = -bi * bi * (ai * bi).sin() + 2.0 * bi;
    }
    for h in [reverse, forward, over_reverse] {
        assert_eq!(h.shape(), &[3, 3]);
        for (g, w) in h.to_vec().iter().zip(&by_hand) {
            assert!((g - w).abs() < 1e-12, "{g} against {w}");
        }
    }
}

/// The potential of two fixed charges, at `(10, 10 - w)` and `(10, 0)`.
#[differentiable(hvp)]
fn potential(x0: f64, x1: f64, w: f64) -> f64 {
    let d1 = ((x0 - 10.0).powi(2) + (x1 - 10.0 + w).powi(2)).sqrt();
    let d2 = ((x0 - 10.0).powi(2) + x1.powi(2)).sqrt();
    1.0 / d1 + 1.0 / d2
}

/// A charged particle pushed by the potential's gradient (naive Euler, until it crosses the
/// x-axis), scored by where it crosses: a function of numbers calling a gradient of numbers.
#[differentiable]
fn crossing(w: f64) -> f64 {
    let (mut x0, mut x1) = (0.0, 8.0);
    let (mut v0, mut v1) = (0.75, 0.0);
    let dt = 0.1;
    let mut result = 0.0;
    let mut flying = true;
    while flying {
        let (a0, a1, _) = potential_grad(x0, x1, w);
        let (n0, n1) = (v0 - dt * a0, v1 - dt * a1);
        if x1 + dt * n1 <= 0.0 {
            let xf = x0 - x1 / n1 * n0;
            result = xf * xf;
            flying = false;
        } else {
            x0 += dt * n0;
            x1 += dt * n1;
            v0 = n0;
            v1 = n1;
        }
    }
    result
}

#[test]
fn a_trajectory_through_a_gradient_of_numbers() {
    for w in [0.0, 0.3] {
        let (value, g) = crossing_value_and_grad(w);
        assert_eq!(value, crossing(w));
        let h = 1e-6;
        let fd = (crossing(w + h) - crossing(w - h)) / (2.0 * h);
        assert!(
            (g - fd).abs() < 1e-6 * fd.abs().max(1.0),
            "{g} against {fd}"
        );
        let (_, tangent) = crossing_jvp(w, &1.0);
        assert!(
            (tangent - g).abs() < 1e-12 * g.abs().max(1.0),
            "{tangent} against {g}"
        );
        let (_, pulled) = crossing_vjp(w, &2.0);
        assert!((pulled - 2.0 * g).abs() < 1e-12 * g.abs().max(1.0));
    }
}

/// `Σ k x² + Σ sin x`.
#[differentiable]
fn energy<T: Element>(x: &Tensor<T>, k: &Tensor<T>) -> Tensor<T> {
    (x * x * k).sum() + x.sin().sum()
}

/// The energy plus its squared slope along `v` in `x` alone: forward mode inside a
/// differentiated function of tensors.
#[differentiable]
fn slope_penalty<T: Element>(x: &Tensor<T>, k: &Tensor<T>, #[nodiff] v: &Tensor<T>) -> Tensor<T> {
    let still = Tensor::zeros(k.shape());
    let (e, s) = energy_jvp(x, k, v, &still);
    e + s.square()
}

/// The slope along the point itself (`x` and `k` as their own tangents): the tangents are
/// differentiated too.
#[differentiable]
fn radial_slope<T: Element>(x: &Tensor<T>, k: &Tensor<T>) -> Tensor<T> {
    let (_, s) = energy_jvp(x, k, x, k);
    s
}

#[test]
fn a_forward_derivative_inside_has_every_variant() {
    let x = Tensor::from_vec(vec![0.3, -0.8, 0.5], &[3]);
    let k = Tensor::from_vec(vec![1.1, 0.4, -0.6], &[3]);
    let v = Tensor::from_vec(vec![0.2, 1.0, -0.5], &[3]);
    check_variants!(
        slope_penalty,
        slope_penalty_value_and_grad,
        slope_penalty_grad,
        slope_penalty_vjp,
        slope_penalty_jvp,
        slope_penalty_pullback;
        [x, k];
        (&x, &k, &v)
    );
    check_variants!(
        radial_slope,
        radial_slope_value_and_grad,
        radial_slope_grad,
        radial_slope_vjp,
        radial_slope_jvp,
        radial_slope_pullback;
        [x, k];
        (&x, &k)
    );
    // By hand: the radial slope is Σ (2kx + cos x) x + Σ x² k = Σ 3kx² + x cos x, whose
    // gradient in k is 3x².
    let (gx, gk) = radial_slope_grad(&x, &k);
    for i in 0..3 {
        let (xi, ki) = (x.to_vec()[i], k.to_vec()[i]);
        assert!((gk.to_vec()[i] - 3.0 * xi * xi).abs() < 1e-12);
        let dx = 6.0 * ki * xi + xi.cos() - xi * xi.sin();
        assert!(
            (gx.to_vec()[i] - dx).abs() < 1e-12,
            "{} against {dx}",
            gx.to_vec()[i]
        );
    }
}
