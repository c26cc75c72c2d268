//! Layers defined through a trait, the way Rust users write models: `#[differentiable]` on the
//! trait's method declaration, on the impls (a generic one among them), on a trait with a
//! provided method and on a trait generic over the element type, and functions generic over
//! `M: Layer + Differentiable`. Every variant is
//! checked against finite differences, the dot-product test and the plain functions
//! (`support::check_variants!`), and one gradient against its formula by hand.

mod support;

use rune_ad::prelude::*;
use support::check_variants;

/// A layer: what a model's code calls, whatever the layer is.
pub trait Layer {
    #[differentiable]
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64>;

    /// A method the attribute leaves alone.
    fn width(&self) -> usize;
}

#[derive(Clone, Differentiable)]
pub struct Dense {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

#[differentiable]
impl Layer for Dense {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        (x.matmul(&self.w) + &self.b).tanh()
    }

    fn width(&self) -> usize {
        self.b.len()
    }
}

/// A gated layer: `x * sigmoid(x * g)`, elementwise.
#[derive(Clone, Differentiable)]
pub struct Gated {
    g: Tensor<f64>,
}

#[differentiable]
impl Layer for Gated {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x * &(x * &self.g).sigmoid()
    }

    fn width(&self) -> usize {
        self.g.len()
    }
}

/// `x + inner(x)`, for any layer: a generic impl, whose entry points capture its parameter.
#[derive(Clone, Differentiable)]
pub struct Residual<L> {
    inner: L,
}

#[differentiable]
impl<L: Layer + Differentiable> Layer for Residual<L> {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x + &self.inner.forward(x)
    }

    fn width(&self) -> usize {
        self.inner.width()
    }
}

/// The mean squared error of any layer: a function generic over a differentiated structure.
#[differentiable]
fn mse<M: Layer + Differentiable>(
    model: &M,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    let d = model.forward(x) - y;
    (&d * &d).mean()
}

#[differentiable]
fn dense_mse(model: &Dense, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
    mse(model, x, y)
}

#[differentiable]
fn residual_mse(
    model: &Residual<Gated>,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    mse(model, x, y)
}

/// A model of layers of several types, each called through the trait, and a stack of one type.
#[derive(Clone, Differentiable)]
pub struct Model {
    stack: Vec<Dense>,
    gate: Residual<Gated>,
    head: Dense,
}

#[differentiable]
impl Model {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        let mut h = x.clone();
        for layer in &self.stack {
            h = layer.forward(&h);
        }
        self.head.forward(&self.gate.forward(&h))
    }
}

#[differentiable]
fn model_loss(model: &Model, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
    let d = model.forward(x) - y;
    (&d * &d).sum()
}

/// A trait whose provided method is differentiated too, through the attribute on the trait.
#[differentiable]
pub trait Scorer {
    fn score(&self, x: &Tensor<f64>) -> Tensor<f64>;

    fn loss(&self, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
        let d = self.score(x) - y;
        (&d * &d * 0.5).sum()
    }
}

#[differentiable]
impl Scorer for Dense {
    fn score(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x.matmul(&self.w) + &self.b
    }
}

#[differentiable]
fn scorer_loss(model: &Dense, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
    Scorer::loss(model, x, y)
}

/// A trait generic over the element type, under the attribute on the whole trait.
#[differentiable]
pub trait Head<T: Element> {
    fn logits(&self, x: &Tensor<T>) -> Tensor<T>;
}

#[differentiable]
impl Head<f64> for Gated {
    fn logits(&self, x: &Tensor<f64>) -> Tensor<f64> {
        (x * &self.g).exp()
    }
}

#[differentiable]
fn head_loss<H: Head<f64> + Differentiable>(head: &H, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    head.logits(x).sum().ln()
}

#[differentiable]
fn gated_head_loss(head: &Gated, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    head_loss(head, x)
}

fn dense(seed: u64, inputs: usize, outputs: usize) -> Dense {
    Dense {
        w: Tensor::rand_normal(&[inputs, outputs], 0.0, 0.5, seed),
        b: Tensor::rand_normal(&[outputs], 0.0, 0.5, seed + 1),
    }
}

fn data() -> (Tensor<f64>, Tensor<f64>) {
    (
        Tensor::rand_normal(&[4, 3], 0.0, 1.0, 7),
        Tensor::rand_normal(&[4, 3], 0.0, 1.0, 8),
    )
}

#[test]
fn a_layer_through_the_trait_has_every_variant() {
    let (x, y) = data();
    let model = dense(1, 3, 3);
    check_variants!(
        dense_mse,
        dense_mse_value_and_grad,
        dense_mse_grad,
        dense_mse_vjp,
        dense_mse_jvp,
        dense_mse_pullback;
        [model];
        (&model, &x, &y)
    );
    // The trait's own entry points, on the layer and through a generic bound, agree.
    let (value, grad) = dense_mse_value_and_grad(&model, &x, &y);
    let (generic_value, generic_grad) = mse_value_and_grad(&model, &x, &y);
    assert_eq!(value.item(), generic_value.item());
    assert_eq!(grad.w.to_vec(), generic_grad.w.to_vec());
    let cotangent = Tensor::rand_normal(&[4, 3], 0.0, 1.0, 9);
    let (out, (layer_grad, _)) = Layer::forward_vjp(&model, &x, &cotangent);
    assert_eq!(out.to_vec(), model.forward(&x).to_vec());
    // By hand: out = tanh(z), z = x w + b, so ∂/∂b = Σ_rows cotangent (1 - out²).
    let by_hand: Vec<f64> = (0..3)
        .map(|j| {
            (0..4)
                .map(|i| {
                    let o = out.to_vec()[i * 3 + j];
                    cotangent.to_vec()[i * 3 + j] * (1.0 - o * o)
                })
                .sum()
        })
        .collect();
    for (g, h) in layer_grad.b.to_vec().iter().zip(&by_hand) {
        assert!((g - h).abs() <= 1e-12 * h.abs().max(1.0), "{g} against {h}");
    }
}

#[test]
fn a_generic_impl_through_the_trait_has_every_variant() {
    let (x, y) = data();
    let model = Residual {
        inner: Gated {
            g: Tensor::rand_normal(&[3], 0.0, 1.0, 3),
        },
    };
    check_variants!(
        residual_mse,
        residual_mse_value_and_grad,
        residual_mse_grad,
        residual_mse_vjp,
        residual_mse_jvp,
        residual_mse_pullback;
        [model];
        (&model, &x, &y)
    );
}

#[test]
fn a_model_of_layers_of_several_types_has_every_variant() {
    let (x, y) = data();
    let model = Model {
        stack: vec![dense(11, 3, 3), dense(13, 3, 3)],
        gate: Residual {
            inner: Gated {
                g: Tensor::rand_normal(&[3], 0.0, 1.0, 15),
            },
        },
        head: dense(17, 3, 3),
    };
    check_variants!(
        model_loss,
        model_loss_value_and_grad,
        model_loss_grad,
        model_loss_vjp,
        model_loss_jvp,
        model_loss_pullback;
        [model];
        (&model, &x, &y)
    );
}

#[test]
fn a_provided_method_of_the_trait_has_every_variant() {
    let (x, y) = data();
    let model = dense(21, 3, 3);
    check_variants!(
        scorer_loss,
        scorer_loss_value_and_grad,
        scorer_loss_grad,
        scorer_loss_vjp,
        scorer_loss_jvp,
        scorer_loss_pullback;
        [model];
        (&model, &x, &y)
    );
    // The provided method's own gradient: ∂/∂b of ½ Σ (x w + b - y)² is Σ_rows (x w + b - y).
    let (_, grad) = Scorer::loss_value_and_grad(&model, &x, &y);
    let residual = model.score(&x) - &y;
    let by_hand = residual.sum_axes(&[0], false);
    for (g, h) in grad.b.to_vec().iter().zip(by_hand.to_vec()) {
        assert!((g - h).abs() <= 1e-12 * h.abs().max(1.0), "{g} against {h}");
    }
}

#[test]
fn a_trait_object_runs_the_layer_as_written() {
    // The entry points take `Self: Sized`; the trait stays dyn-compatible for the plain calls.
    let (x, _) = data();
    let layers: Vec<Box<dyn Layer>> = vec![
        Box::new(dense(31, 3, 3)),
        Box::new(Gated {
            g: Tensor::rand_normal(&[3], 0.0, 1.0, 33),
        }),
    ];
    let mut h = x.clone();
    for layer in &layers {
        h = layer.forward(&h);
        assert_eq!(layer.width(), 3);
    }
    let first = dense(31, 3, 3).forward(&x);
    let second = &first * &(&first * &Tensor::rand_normal(&[3], 0.0, 1.0, 33)).sigmoid();
    assert_eq!(h.to_vec(), second.to_vec());
}

#[test]
fn a_generic_trait_has_every_variant() {
    let (x, _) = data();
    let head = Gated {
        g: Tensor::rand_normal(&[3], 0.0, 1.0, 41),
    };
    check_variants!(
        gated_head_loss,
        gated_head_loss_value_and_grad,
        gated_head_loss_grad,
        gated_head_loss_vjp,
        gated_head_loss_jvp,
        gated_head_loss_pullback;
        [head];
        (&head, &x)
    );
    // By hand: ln Σ exp(x g) has ∂/∂g_j = Σ_i x_ij exp(x_ij g_j) / Σ exp(x g).
    let (_, grad) = gated_head_loss_value_and_grad(&head, &x);
    let e = (&x * &head.g).exp();
    let by_hand = (&x * &e).sum_axes(&[0], false) / e.sum().item();
    for (g, h) in grad.g.to_vec().iter().zip(by_hand.to_vec()) {
        assert!((g - h).abs() <= 1e-12 * h.abs().max(1.0), "{g} against {h}");
    }
}
