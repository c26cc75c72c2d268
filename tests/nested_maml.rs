//! MAML on a model, written as users write it: the inner step's gradient comes from
//! `inner_loss_grad(model, ..)`, a structure read by its parts (`g.layers`, `g.head`), and the
//! meta-loss at the adapted parameters is differentiated with respect to the model. Its
//! gradient is `(I − α H) ∇L_q(θ')`, second order through the inner gradient; checked in every
//! variant against finite differences and the dot-product test, against that formula built
//! from the first-order entry points and `inner_loss_hvp`, in `f32` against `f64`, and to third
//! order (`f_hvp` of the meta-loss) against differences of its gradient.

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

/// A regressor: tanh layers, then a linear head.
#[derive(Clone, Differentiable)]
pub struct Mlp<T: Element> {
    layers: Vec<Dense<T>>,
    head: Tensor<T>,
}

/// The task loss on one batch.
#[differentiable]
fn inner_loss<T: Element>(
    model: &Mlp<T>,
    #[nodiff] x: &Tensor<T>,
    #[nodiff] y: &Tensor<T>,
) -> Tensor<T> {
    let mut h = x.clone();
    for layer in &model.layers {
        h = layer.forward(&h);
    }
    (h.matmul(&model.head) - y).square().mean()
}

/// One MAML step: adapt on the support batch by one gradient step of size `0.3`, then the loss
/// of the adapted parameters on the query batch.
#[differentiable]
fn maml_loss<T: Element>(
    model: &Mlp<T>,
    #[nodiff] xs: &Tensor<T>,
    #[nodiff] ys: &Tensor<T>,
    #[nodiff] xq: &Tensor<T>,
    #[nodiff] yq: &Tensor<T>,
) -> Tensor<T> {
    let alpha = T::from_f64(0.3);
    let g = inner_loss_grad(model, xs, ys);
    let mut h = xq.clone();
    for (layer, step) in model.layers.iter().zip(&g.layers) {
        let w = &layer.w - &(&step.w * alpha);
        let b = &layer.b - &(&step.b * alpha);
        h = (h.matmul(&w) + b).tanh();
    }
    let head = &model.head - &(&g.head * alpha);
    (h.matmul(&head) - yq).square().mean()
}

/// Only one part of the model's gradient read, the other results of `value_and_grad` too: a
/// penalty on the head's gradient plus the loss itself.
#[differentiable]
fn head_penalty<T: Element>(
    model: &Mlp<T>,
    #[nodiff] x: &Tensor<T>,
    #[nodiff] y: &Tensor<T>,
) -> Tensor<T> {
    let (loss, g) = inner_loss_value_and_grad(model, x, y);
    loss + g.head.square().sum() + g.layers[0].b.square().sum() * T::from_f64(0.5)
}

fn layer(inputs: usize, outputs: usize, seed: u64) -> Dense<f64> {
    Dense {
        w: Tensor::rand_normal(&[inputs, outputs], 0.0, 0.7, seed),
        b: Tensor::rand_normal(&[outputs], 0.0, 0.3, seed + 1),
    }
}

fn model(widths: &[usize], seed: u64) -> Mlp<f64> {
    Mlp {
        layers: widths
            .windows(2)
            .enumerate()
            .map(|(i, w)| layer(w[0], w[1], seed + 2 * i as u64))
            .collect(),
        head: Tensor::rand_normal(&[*widths.last().unwrap(), 1], 0.0, 0.7, seed + 100),
    }
}

fn flat(m: &Mlp<f64>) -> Vec<f64> {
    m.leaves().iter().flat_map(|l| l.to_vec()).collect()
}

struct Task {
    xs: Tensor<f64>,
    ys: Tensor<f64>,
    xq: Tensor<f64>,
    yq: Tensor<f64>,
}

fn task(seed: u64) -> Task {
    let xs = Tensor::rand_normal(&[6, 2], 0.0, 1.0, seed);
    let xq = Tensor::rand_normal(&[5, 2], 0.0, 1.0, seed + 1);
    let target = |x: &Tensor<f64>| (x.shrink(&[(0, x.shape()[0]), (0, 1)]) * 1.5).sin();
    Task {
        ys: target(&xs),
        yq: target(&xq),
        xs,
        xq,
    }
}

#[test]
fn a_maml_step_on_a_model_has_every_variant() {
    let m = model(&[2, 4, 3], 1);
    let Task { xs, ys, xq, yq } = task(10);
    check_variants!(
        maml_loss,
        maml_loss_value_and_grad,
        maml_loss_grad,
        maml_loss_vjp,
        maml_loss_jvp,
        maml_loss_pullback;
        [m];
        (&m, &xs, &ys, &xq, &yq)
    );
    check_variants!(
        head_penalty,
        head_penalty_value_and_grad,
        head_penalty_grad,
        head_penalty_vjp,
        head_penalty_jvp,
        head_penalty_pullback;
        [m];
        (&m, &xs, &ys)
    );
}

#[test]
fn the_meta_gradient_is_the_query_gradient_through_one_minus_alpha_h() {
    // θ' = θ − α ∇L_s(θ); ∇_θ L_q(θ') = (I − α ∇²L_s(θ)) ∇L_q(θ'), built from the first-order
    // gradient at θ' and the inner loss's Hessian-vector product, as one writes it in JAX.
    let m = model(&[2, 3, 3], 7);
    let Task { xs, ys, xq, yq } = task(20);
    let alpha = 0.3;
    let mut adapted = m.clone();
    adapted.axpy(-alpha, &inner_loss_grad(&m, &xs, &ys));
    let query = inner_loss_grad(&adapted, &xq, &yq);
    let (_, hv) = inner_loss_hvp(&m, &xs, &ys, &query);
    let mut expected = query.clone();
    expected.axpy(-alpha, &hv);
    let got = maml_loss_grad(&m, &xs, &ys, &xq, &yq);
    for (a, b) in flat(&got).iter().zip(flat(&expected)) {
        assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} against {b}");
    }
    // The value is the query loss at the adapted parameters.
    let value = maml_loss(&m, &xs, &ys, &xq, &yq).item();
    let at_adapted = inner_loss(&adapted, &xq, &yq).item();
    assert!(
        (value - at_adapted).abs() <= 1e-14,
        "{value} against {at_adapted}"
    );
}

#[test]
fn the_meta_gradient_in_f32_and_its_hessian_times_a_direction() {
    let m = model(&[2, 3, 2], 30);
    let Task { xs, ys, xq, yq } = task(40);
    let g64 = flat(&maml_loss_grad(&m, &xs, &ys, &xq, &yq));
    let m32 = Mlp {
        layers: m
            .layers
            .iter()
            .map(|l| Dense {
                w: l.w.cast::<f32>(),
                b: l.b.cast::<f32>(),
            })
            .collect(),
        head: m.head.cast::<f32>(),
    };
    let (xs32, ys32, xq32, yq32) = (
        xs.cast::<f32>(),
        ys.cast::<f32>(),
        xq.cast::<f32>(),
        yq.cast::<f32>(),
    );
    let g32 = maml_loss_grad(&m32, &xs32, &ys32, &xq32, &yq32);
    let g32: Vec<f64> = g32
        .leaves()
        .iter()
        .flat_map(|l| l.to_vec())
        .map(f64::from)
        .collect();
    for (a, b) in g32.iter().zip(&g64) {
        assert!((a - b).abs() < 2e-4 * b.abs().max(1.0), "{a} against {b}");
    }
    // Third derivatives of the inner loss: `maml_loss_hvp` against central differences of the
    // meta-gradient along `v`.
    let mut v = m.zeros_like();
    for (i, leaf) in v.leaves_mut().into_iter().enumerate() {
        *leaf = Tensor::rand_normal(leaf.shape(), 0.0, 1.0, 50 + i as u64);
    }
    let (g, hv) = maml_loss_hvp(&m, &xs, &ys, &xq, &yq, &v);
    for (a, b) in flat(&g).iter().zip(&g64) {
        assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} against {b}");
    }
    let eps = 1e-5;
    let at = |s: f64| {
        let mut moved = m.clone();
        moved.axpy(s, &v);
        flat(&maml_loss_grad(&moved, &xs, &ys, &xq, &yq))
    };
    let (plus, minus) = (at(eps), at(-eps));
    for (i, h) in flat(&hv).iter().enumerate() {
        let fd = (plus[i] - minus[i]) / (2.0 * eps);
        assert!(
            (h - fd).abs() < 1e-6 * fd.abs().max(1.0),
            "element {i}: {h} against {fd}"
        );
    }
}

/// The same step as methods of the model: `self.task_loss_grad(..)` inside `self.meta_loss(..)`.
#[differentiable]
impl<T: Element> Mlp<T> {
    fn task_loss(&self, #[nodiff] x: &Tensor<T>, #[nodiff] y: &Tensor<T>) -> Tensor<T> {
        let mut h = x.clone();
        for layer in &self.layers {
            h = layer.forward(&h);
        }
        (h.matmul(&self.head) - y).square().mean()
    }

    fn meta_loss(
        &self,
        #[nodiff] xs: &Tensor<T>,
        #[nodiff] ys: &Tensor<T>,
        #[nodiff] xq: &Tensor<T>,
        #[nodiff] yq: &Tensor<T>,
    ) -> Tensor<T> {
        let alpha = T::from_f64(0.3);
        let g = self.task_loss_grad(xs, ys);
        let mut h = xq.clone();
        for (k, layer) in self.layers.iter().enumerate() {
            let w = &layer.w - &(&g.layers[k].w * alpha);
            let b = &layer.b - &(&g.layers[k].b * alpha);
            h = (h.matmul(&w) + b).tanh();
        }
        let head = &self.head - &(&g.head * alpha);
        (h.matmul(&head) - yq).square().mean()
    }
}

#[test]
fn a_maml_step_as_methods_of_the_model() {
    let m = model(&[2, 3, 3], 60);
    let Task { xs, ys, xq, yq } = task(70);
    check_variants!(
        Mlp::meta_loss,
        Mlp::meta_loss_value_and_grad,
        Mlp::meta_loss_grad,
        Mlp::meta_loss_vjp,
        Mlp::meta_loss_jvp,
        Mlp::meta_loss_pullback;
        [m];
        (&m, &xs, &ys, &xq, &yq)
    );
    let by_method = flat(&m.meta_loss_grad(&xs, &ys, &xq, &yq));
    let by_function = flat(&maml_loss_grad(&m, &xs, &ys, &xq, &yq));
    for (a, b) in by_method.iter().zip(&by_function) {
        assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} against {b}");
    }
}

/// The model's gradient taken in a loop, at three scalings of the batch, each read by its parts
/// in a loop of its own: the gradient read in one pass of the loop is that pass's.
#[differentiable]
fn gradient_alignment<T: Element>(
    model: &Mlp<T>,
    #[nodiff] x: &Tensor<T>,
    #[nodiff] y: &Tensor<T>,
) -> Tensor<T> {
    let mut total = model.head.sum() * T::from_f64(0.0);
    for k in 0..3 {
        let scaled = x * T::from_f64(1.0 + 0.5 * k as f64);
        let g = inner_loss_grad(model, &scaled, y);
        for (layer, step) in model.layers.iter().zip(&g.layers) {
            total += (&layer.w * &step.w).sum();
        }
        total += g.head.square().sum() * T::from_f64(k as f64 + 1.0);
    }
    total
}

#[test]
fn gradients_taken_in_a_loop_and_read_in_a_loop() {
    let m = model(&[2, 3, 3], 90);
    let Task { xs, ys, .. } = task(91);
    check_variants!(
        gradient_alignment,
        gradient_alignment_value_and_grad,
        gradient_alignment_grad,
        gradient_alignment_vjp,
        gradient_alignment_jvp,
        gradient_alignment_pullback;
        [m];
        (&m, &xs, &ys)
    );
    // The value from first-order gradients called outside.
    let mut expected = 0.0;
    for k in 0..3 {
        let g = inner_loss_grad(&m, &(&xs * (1.0 + 0.5 * k as f64)), &ys);
        for (layer, step) in m.layers.iter().zip(&g.layers) {
            expected += (&layer.w * &step.w).sum().item();
        }
        expected += g.head.square().sum().item() * (k as f64 + 1.0);
    }
    let got = gradient_alignment(&m, &xs, &ys).item();
    assert!(
        (got - expected).abs() <= 1e-12 * expected.abs(),
        "{got} against {expected}"
    );
}
