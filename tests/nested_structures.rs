//! Gradients of functions of model structures, called inside differentiated functions: a WGAN-GP
//! critic written as users write models (layers in a `Vec`, each with a `forward` method, a loop
//! over them), whose gradient penalty `(‖∇ₓ critic(x̂)‖ − 1)²` is differentiated with respect to
//! the model: a mixed second derivative, from `critic_grad(&model, &x)` with the model's own
//! gradient bound to `_`; and the same as methods of the model, `self.score_grad(x)` inside
//! `self.loss(..)`. Checked in every variant against finite differences and the dot-product
//! test, against the derivative written out by hand for one layer, in `f32` against `f64`, and
//! to third order (`f_hvp` of the loss) against differences of its gradient.

mod support;

use rune_ad::prelude::*;
use support::check_variants;

/// One dense layer.
#[derive(Clone, Differentiable)]
pub struct Dense<T: Element> {
    w: Tensor<T>,
    b: Tensor<T>,
}

impl<T: Element> Dense<T> {
    #[differentiable]
    fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        (x.matmul(&self.w) + &self.b).tanh()
    }
}

/// The critic: layers, then a linear head, and a name that is not differentiated.
#[derive(Clone, Differentiable)]
pub struct Critic<T: Element> {
    layers: Vec<Dense<T>>,
    head: Tensor<T>,
    #[nodiff]
    name: String,
}

/// The critic's scores of a batch, summed: row `i` of `∇ₓ` is example `i`'s gradient.
#[differentiable]
fn critic<T: Element>(model: &Critic<T>, x: &Tensor<T>) -> Tensor<T> {
    let mut h = x.clone();
    for layer in &model.layers {
        h = layer.forward(&h);
    }
    h.matmul(&model.head).sum()
}

/// The penalty alone: `Σᵢ (‖∇ₓ critic(x̂ᵢ)‖ − 1)²`.
#[differentiable]
fn penalty<T: Element>(model: &Critic<T>, #[nodiff] mix: &Tensor<T>) -> Tensor<T> {
    let (_, gx) = critic_grad(model, mix);
    let norms = gx.square().sum_axes(&[1], false).sqrt();
    (norms - T::from_f64(1.0)).square().sum()
}

/// WGAN-GP's critic loss: the mean score of fakes minus that of reals, plus ten times the
/// penalty's mean at interpolates.
#[differentiable]
fn critic_loss<T: Element>(
    model: &Critic<T>,
    #[nodiff] real: &Tensor<T>,
    #[nodiff] fake: &Tensor<T>,
    #[nodiff] mix: &Tensor<T>,
) -> Tensor<T> {
    let n = T::from_f64(real.shape()[0] as f64);
    let (_, gx) = critic_grad(model, mix);
    let norms = (gx.square().sum_axes(&[1], false) + T::from_f64(1e-12)).sqrt();
    let gp = (norms - T::from_f64(1.0)).square().mean();
    (critic(model, fake) - critic(model, real)) / n + gp * T::from_f64(10.0)
}

fn layer(inputs: usize, outputs: usize, seed: u64) -> Dense<f64> {
    Dense {
        w: Tensor::rand_normal(&[inputs, outputs], 0.0, 0.6, seed),
        b: Tensor::rand_normal(&[outputs], 0.0, 0.3, seed + 1),
    }
}

fn model(widths: &[usize], seed: u64) -> Critic<f64> {
    let layers = widths
        .windows(2)
        .enumerate()
        .map(|(i, w)| layer(w[0], w[1], seed + 2 * i as u64))
        .collect();
    Critic {
        layers,
        head: Tensor::rand_normal(&[*widths.last().unwrap(), 1], 0.0, 0.6, seed + 100),
        name: "critic".to_owned(),
    }
}

fn to_f32(m: &Critic<f64>) -> Critic<f32> {
    Critic {
        layers: m
            .layers
            .iter()
            .map(|l| Dense {
                w: l.w.cast::<f32>(),
                b: l.b.cast::<f32>(),
            })
            .collect(),
        head: m.head.cast::<f32>(),
        name: m.name.clone(),
    }
}

fn flat(m: &Critic<f64>) -> Vec<f64> {
    m.leaves().iter().flat_map(|l| l.to_vec()).collect()
}

/// `hv`, a Hessian of the model times `v`, against central differences of `grad` along `v`.
fn assert_hvp(
    m: &Critic<f64>,
    v: &Critic<f64>,
    hv: &Critic<f64>,
    grad: impl Fn(&Critic<f64>) -> Critic<f64>,
) {
    let eps = 1e-5;
    let step = |s: f64| {
        let mut moved = m.clone();
        moved.axpy(s, v);
        flat(&grad(&moved))
    };
    let (plus, minus) = (step(eps), step(-eps));
    for (i, h) in flat(hv).iter().enumerate() {
        let fd = (plus[i] - minus[i]) / (2.0 * eps);
        assert!(
            (h - fd).abs() < 1e-6 * fd.abs().max(1.0),
            "element {i}: {h} against {fd}"
        );
    }
}

fn flat32(m: &Critic<f32>) -> Vec<f64> {
    m.leaves()
        .iter()
        .flat_map(|l| l.to_vec())
        .map(f64::from)
        .collect()
}

#[test]
fn a_gradient_penalty_of_a_model_has_every_variant() {
    let m = model(&[3, 5, 4], 1);
    let real = Tensor::rand_normal(&[6, 3], 0.0, 1.0, 10);
    let fake = Tensor::rand_normal(&[6, 3], 0.5, 1.0, 11);
    let t = Tensor::rand_uniform(&[6, 1], 0.0, 1.0, 12);
    let mix = &real * &t + &fake * &(1.0 - &t);
    check_variants!(
        critic_loss,
        critic_loss_value_and_grad,
        critic_loss_grad,
        critic_loss_vjp,
        critic_loss_jvp,
        critic_loss_pullback;
        [m];
        (&m, &real, &fake, &mix)
    );
    // The constant field comes back as the model's.
    assert_eq!(critic_loss_grad(&m, &real, &fake, &mix).name, "critic");
    // In f32, the same gradient to f32 precision.
    let g64 = flat(&critic_loss_grad(&m, &real, &fake, &mix));
    let g32 = critic_loss_grad(
        &to_f32(&m),
        &real.cast::<f32>(),
        &fake.cast::<f32>(),
        &mix.cast::<f32>(),
    );
    for (a, b) in flat32(&g32).iter().zip(&g64) {
        assert!((a - b).abs() < 2e-4 * b.abs().max(1.0), "{a} against {b}");
    }
}

#[test]
fn the_penalty_gradient_in_the_head_is_the_one_by_hand() {
    // One layer: critic(x) = Σᵢ vᵀ tanh(Wᵀxᵢ + b), so gᵢ = ∇ₓᵢ = W (v ⊙ dᵢ) with
    // dᵢ = 1 − tanh²(Wᵀxᵢ + b), and ∂/∂v Σᵢ (‖gᵢ‖ − 1)² = Σᵢ 2 (‖gᵢ‖ − 1) dᵢ ⊙ (Wᵀ gᵢ) / ‖gᵢ‖.
    let m = model(&[3, 4], 5);
    let mix = Tensor::rand_normal(&[5, 3], 0.0, 1.0, 6);
    let (w, b, v) = (
        m.layers[0].w.to_vec(),
        m.layers[0].b.to_vec(),
        m.head.to_vec(),
    );
    let x = mix.to_vec();
    let (n_in, n_hidden) = (3, 4);
    let mut by_hand = vec![0.0; n_hidden];
    for i in 0..5 {
        let d: Vec<f64> = (0..n_hidden)
            .map(|k| {
                let z = b[k]
                    + (0..n_in)
                        .map(|j| x[i * n_in + j] * w[j * n_hidden + k])
                        .sum::<f64>();
                1.0 - z.tanh().powi(2)
            })
            .collect();
        let g: Vec<f64> = (0..n_in)
            .map(|j| {
                (0..n_hidden)
                    .map(|k| w[j * n_hidden + k] * v[k] * d[k])
                    .sum()
            })
            .collect();
        let norm = g.iter().map(|a| a * a).sum::<f64>().sqrt();
        for k in 0..n_hidden {
            let wtg: f64 = (0..n_in).map(|j| w[j * n_hidden + k] * g[j]).sum();
            by_hand[k] += 2.0 * (norm - 1.0) * d[k] * wtg / norm;
        }
    }
    let got = penalty_grad(&m, &mix).head.to_vec();
    for (g, h) in got.iter().zip(&by_hand) {
        assert!((g - h).abs() <= 1e-12 * h.abs().max(1.0), "{g} against {h}");
    }
}

#[test]
fn the_penalty_hessian_times_a_direction_is_the_derivative_of_its_gradient() {
    // Third derivatives of the critic: `penalty_hvp` runs `critic_grad`'s rules on dual numbers.
    let m = model(&[2, 3, 3], 20);
    let mix = Tensor::rand_normal(&[4, 2], 0.0, 1.0, 21);
    let mut v = m.zeros_like();
    for (i, leaf) in v.leaves_mut().into_iter().enumerate() {
        *leaf = Tensor::rand_normal(leaf.shape(), 0.0, 1.0, 30 + i as u64);
    }
    let (g, hv) = penalty_hvp(&m, &mix, &v);
    for (a, b) in flat(&g).iter().zip(flat(&penalty_grad(&m, &mix))) {
        assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} against {b}");
    }
    assert_hvp(&m, &v, &hv, |moved| penalty_grad(moved, &mix));
}

/// The critic as methods of the model: `#[differentiable]` on the generic `impl` block gives each
/// method `_hvp`, so `self.score_grad(x)` is differentiated inside `self.loss(..)`.
#[differentiable]
impl<T: Element> Critic<T> {
    fn score(&self, x: &Tensor<T>) -> Tensor<T> {
        let mut h = x.clone();
        for layer in &self.layers {
            h = layer.forward(&h);
        }
        h.matmul(&self.head).sum()
    }

    fn loss(
        &self,
        #[nodiff] real: &Tensor<T>,
        #[nodiff] fake: &Tensor<T>,
        #[nodiff] mix: &Tensor<T>,
    ) -> Tensor<T> {
        let n = T::from_f64(real.shape()[0] as f64);
        let (_, gx) = self.score_grad(mix);
        let norms = (gx.square().sum_axes(&[1], false) + T::from_f64(1e-12)).sqrt();
        let gp = (norms - T::from_f64(1.0)).square().mean();
        (self.score(fake) - self.score(real)) / n + gp * T::from_f64(10.0)
    }

    /// The output per example, as `features`.
    fn column(&self, #[nodiff] x: &Tensor<T>) -> Tensor<T> {
        let mut h = x.clone();
        for layer in &self.layers {
            h = layer.forward(&h);
        }
        h.matmul(&self.head)
    }

    /// `vjp_penalty` as a method: `self.column_vjp(..)` inside it.
    fn vjp_loss(&self, #[nodiff] x: &Tensor<T>, #[nodiff] c: &Tensor<T>) -> Tensor<T> {
        let (y, g) = self.column_vjp(x, c);
        y.square().sum() + g.head.square().sum() + g.layers[0].w.square().sum()
    }

    /// `pullback_penalty` as a method: `self.column_pullback(..)` inside it.
    fn pullback_loss(&self, #[nodiff] x: &Tensor<T>, #[nodiff] c: &Tensor<T>) -> Tensor<T> {
        let (y, pb) = self.column_pullback(x);
        let g = pb(c);
        let twice = pb(&(c * T::from_f64(2.0)));
        y.square().sum()
            + g.head.square().sum()
            + twice.layers[0].w.square().sum() * T::from_f64(0.25)
    }

    /// The score of the model alone, and `curvature` as a method: `self.total_hvp(..)`.
    fn total(&self, #[nodiff] x: &Tensor<T>) -> Tensor<T> {
        self.column(x).sum()
    }

    fn curvature_loss(&self, #[nodiff] x: &Tensor<T>, #[nodiff] v: &Critic<T>) -> Tensor<T> {
        let (g, hv) = self.total_hvp(x, v);
        hv.head.square().sum() + hv.layers[1].b.square().sum() + g.head.sum()
    }

    /// `score_times_jvp` as a method: `self.score_jvp(..)` inside it.
    fn along(&self, #[nodiff] x: &Tensor<T>, #[nodiff] u: &Tensor<T>) -> Tensor<T> {
        let (score, slope) = self.score_jvp(x, self, u);
        score * slope
    }
}

#[test]
fn a_gradient_penalty_as_methods_of_the_model() {
    let m = model(&[3, 4, 4], 40);
    let real = Tensor::rand_normal(&[5, 3], 0.0, 1.0, 41);
    let fake = Tensor::rand_normal(&[5, 3], 0.5, 1.0, 42);
    let mix = (&real + &fake) * 0.5;
    check_variants!(
        Critic::loss,
        Critic::loss_value_and_grad,
        Critic::loss_grad,
        Critic::loss_vjp,
        Critic::loss_jvp,
        Critic::loss_pullback;
        [m];
        (&m, &real, &fake, &mix)
    );
    // The methods compute what the free functions do.
    let by_method = flat(&m.loss_grad(&real, &fake, &mix));
    let by_function = flat(&critic_loss_grad(&m, &real, &fake, &mix));
    for (a, b) in by_method.iter().zip(&by_function) {
        assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} against {b}");
    }
    // The method's own Hessian-vector product (third derivatives of the critic) against
    // differences of its gradient, in f64, and its gradient in f32.
    let mut v = m.zeros_like();
    for (i, leaf) in v.leaves_mut().into_iter().enumerate() {
        *leaf = Tensor::rand_normal(leaf.shape(), 0.0, 1.0, 50 + i as u64);
    }
    let (_, hv) = m.loss_hvp(&real, &fake, &mix, &v);
    assert_hvp(&m, &v, &hv, |moved| moved.loss_grad(&real, &fake, &mix));
    let g32 = to_f32(&m).loss_grad(&real.cast::<f32>(), &fake.cast::<f32>(), &mix.cast::<f32>());
    for (a, b) in flat32(&g32).iter().zip(&by_method) {
        assert!((a - b).abs() < 2e-4 * b.abs().max(1.0), "{a} against {b}");
    }
}

/// The critic's score and its input gradient from one call, the model's gradient bound to `_`
/// inside the nested pattern.
#[differentiable]
fn score_times_slope<T: Element>(model: &Critic<T>, #[nodiff] x: &Tensor<T>) -> Tensor<T> {
    let (score, (_, gx)) = critic_value_and_grad(model, x);
    score * gx.square().sum()
}

/// The critic's score and its slope along the model itself and a direction `u` of the input.
#[differentiable]
fn score_times_jvp<T: Element>(
    model: &Critic<T>,
    #[nodiff] x: &Tensor<T>,
    #[nodiff] u: &Tensor<T>,
) -> Tensor<T> {
    let (score, slope) = critic_jvp(model, x, model, u);
    score * slope
}

#[test]
fn a_value_and_grad_and_a_jvp_of_a_model_inside_a_loss() {
    let m = model(&[3, 4], 60);
    let x = Tensor::rand_normal(&[5, 3], 0.0, 1.0, 61);
    let u = Tensor::rand_normal(&[5, 3], 0.0, 1.0, 62);
    check_variants!(
        score_times_slope,
        score_times_slope_value_and_grad,
        score_times_slope_grad,
        score_times_slope_vjp,
        score_times_slope_jvp,
        score_times_slope_pullback;
        [m];
        (&m, &x)
    );
    check_variants!(
        score_times_jvp,
        score_times_jvp_value_and_grad,
        score_times_jvp_grad,
        score_times_jvp_vjp,
        score_times_jvp_jvp,
        score_times_jvp_pullback;
        [m];
        (&m, &x, &u)
    );
    // The value itself: the slope is the critic's derivative along the model and `u` at once,
    // against a central difference of the critic moved along both.
    let eps = 1e-6;
    let moved = |s: f64| {
        let mut at = m.clone();
        at.axpy(s, &m);
        critic(&at, &(&x + &(&u * s))).item()
    };
    let slope = (moved(eps) - moved(-eps)) / (2.0 * eps);
    let expected = critic(&m, &x).item() * slope;
    let got = score_times_jvp(&m, &x, &u).item();
    assert!(
        (got - expected).abs() < 1e-7 * expected.abs().max(1.0),
        "{got} against {expected}"
    );
    // The method computes what the free function does, its gradient too.
    assert_eq!(m.along(&x, &u).item(), got);
    let (by_method, by_function) = (
        flat(&m.along_grad(&x, &u)),
        flat(&score_times_jvp_grad(&m, &x, &u)),
    );
    for (a, b) in by_method.iter().zip(&by_function) {
        assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} against {b}");
    }
}

/// The critic's output per example (a column): a function of the model alone.
#[differentiable]
fn features<T: Element>(model: &Critic<T>, #[nodiff] x: &Tensor<T>) -> Tensor<T> {
    let mut h = x.clone();
    for layer in &model.layers {
        h = layer.forward(&h);
    }
    h.matmul(&model.head)
}

/// `features_vjp` inside a loss: its value and the model's part `Jᵀc`, read by its parts.
#[differentiable]
fn vjp_penalty<T: Element>(
    model: &Critic<T>,
    #[nodiff] x: &Tensor<T>,
    #[nodiff] c: &Tensor<T>,
) -> Tensor<T> {
    let (y, g) = features_vjp(model, x, c);
    y.square().sum() + g.head.square().sum() + g.layers[0].w.square().sum()
}

/// The same through `features_pullback`, its pullback called twice.
#[differentiable]
fn pullback_penalty<T: Element>(
    model: &Critic<T>,
    #[nodiff] x: &Tensor<T>,
    #[nodiff] c: &Tensor<T>,
) -> Tensor<T> {
    let (y, pb) = features_pullback(model, x);
    let g = pb(c);
    let twice = pb(&(c * T::from_f64(2.0)));
    y.square().sum() + g.head.square().sum() + twice.layers[0].w.square().sum() * T::from_f64(0.25)
}

/// The critic's total score, of the model alone.
#[differentiable]
fn score<T: Element>(model: &Critic<T>, #[nodiff] x: &Tensor<T>) -> Tensor<T> {
    features(model, x).sum()
}

/// A curvature penalty `‖H v‖²` over two of the model's parts, from `score_hvp` with a
/// direction `v` of the model's type.
#[differentiable]
fn curvature<T: Element>(
    model: &Critic<T>,
    #[nodiff] x: &Tensor<T>,
    #[nodiff] v: &Critic<T>,
) -> Tensor<T> {
    let (g, hv) = score_hvp(model, x, v);
    hv.head.square().sum() + hv.layers[1].b.square().sum() + g.head.sum()
}

fn direction_like(m: &Critic<f64>, seed: u64) -> Critic<f64> {
    let mut v = m.zeros_like();
    for (i, leaf) in v.leaves_mut().into_iter().enumerate() {
        *leaf = Tensor::rand_normal(leaf.shape(), 0.0, 1.0, seed + i as u64);
    }
    v
}

#[test]
fn a_vjp_a_pullback_and_an_hvp_of_a_model_inside_a_loss() {
    let m = model(&[3, 4, 3], 80);
    let x = Tensor::rand_normal(&[5, 3], 0.0, 1.0, 81);
    let c = Tensor::rand_normal(&[5, 1], 0.0, 1.0, 82);
    let v = direction_like(&m, 90);
    check_variants!(
        vjp_penalty,
        vjp_penalty_value_and_grad,
        vjp_penalty_grad,
        vjp_penalty_vjp,
        vjp_penalty_jvp,
        vjp_penalty_pullback;
        [m];
        (&m, &x, &c)
    );
    check_variants!(
        pullback_penalty,
        pullback_penalty_value_and_grad,
        pullback_penalty_grad,
        pullback_penalty_vjp,
        pullback_penalty_jvp,
        pullback_penalty_pullback;
        [m];
        (&m, &x, &c)
    );
    check_variants!(
        curvature,
        curvature_value_and_grad,
        curvature_grad,
        curvature_vjp,
        curvature_jvp,
        curvature_pullback;
        [m];
        (&m, &x, &v)
    );
    // The values from the first-order entry points: `Jᵀc` from `features_vjp` called
    // directly, and `H v` against differences of `score_grad`.
    let (_, jtc) = features_vjp(&m, &x, &c);
    let y = features(&m, &x);
    let expected = y.square().sum().item()
        + jtc.head.square().sum().item()
        + jtc.layers[0].w.square().sum().item();
    let got = vjp_penalty(&m, &x, &c).item();
    assert!(
        (got - expected).abs() <= 1e-12 * expected.abs(),
        "{got} against {expected}"
    );
    let (_, hv) = score_hvp(&m, &x, &v);
    assert_hvp(&m, &v, &hv, |moved| score_grad(moved, &x));
    // Third order: the curvature penalty's own Hessian times a direction.
    let u = direction_like(&m, 120);
    let (_, hu) = curvature_hvp(&m, &x, &v, &u);
    assert_hvp(&m, &u, &hu, |moved| curvature_grad(moved, &x, &v));
}

#[test]
fn a_vjp_a_pullback_and_an_hvp_as_methods_of_the_model() {
    let m = model(&[3, 4, 3], 140);
    let x = Tensor::rand_normal(&[5, 3], 0.0, 1.0, 141);
    let c = Tensor::rand_normal(&[5, 1], 0.0, 1.0, 142);
    let v = direction_like(&m, 150);
    check_variants!(
        Critic::vjp_loss,
        Critic::vjp_loss_value_and_grad,
        Critic::vjp_loss_grad,
        Critic::vjp_loss_vjp,
        Critic::vjp_loss_jvp,
        Critic::vjp_loss_pullback;
        [m];
        (&m, &x, &c)
    );
    check_variants!(
        Critic::pullback_loss,
        Critic::pullback_loss_value_and_grad,
        Critic::pullback_loss_grad,
        Critic::pullback_loss_vjp,
        Critic::pullback_loss_jvp,
        Critic::pullback_loss_pullback;
        [m];
        (&m, &x, &c)
    );
    check_variants!(
        Critic::curvature_loss,
        Critic::curvature_loss_value_and_grad,
        Critic::curvature_loss_grad,
        Critic::curvature_loss_vjp,
        Critic::curvature_loss_jvp,
        Critic::curvature_loss_pullback;
        [m];
        (&m, &x, &v)
    );
    // The methods compute what the free functions do.
    let pairs = [
        (
            flat(&m.vjp_loss_grad(&x, &c)),
            flat(&vjp_penalty_grad(&m, &x, &c)),
        ),
        (
            flat(&m.pullback_loss_grad(&x, &c)),
            flat(&pullback_penalty_grad(&m, &x, &c)),
        ),
        (
            flat(&m.curvature_loss_grad(&x, &v)),
            flat(&curvature_grad(&m, &x, &v)),
        ),
    ];
    for (by_method, by_function) in pairs {
        for (a, b) in by_method.iter().zip(&by_function) {
            assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} against {b}");
        }
    }
    // Third order through the method's own `_hvp`.
    let u = direction_like(&m, 160);
    let (_, hu) = m.curvature_loss_hvp(&x, &v, &u);
    assert_hvp(&m, &u, &hu, |moved| moved.curvature_loss_grad(&x, &v));
}
