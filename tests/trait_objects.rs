//! Layers of several types in one `Vec<Box<dyn Module>>`, the way `nn.Sequential` holds them:
//! `#[differentiable(dyn)]` on the trait makes `Box<dyn Module>` a differentiable layer. Every
//! variant of models built from boxes (a stack holding a nested stack and a generic residual
//! block; a recurrent cell behind a box, unrolled) is checked against finite differences and the
//! dot-product test (`support::check_variants!`), and its gradient against the same model
//! written with concrete types, which does not go through the boxes.

mod support;

use rune_ad::optim::Sgd;
use rune_ad::prelude::*;
use support::check_variants;

/// A layer, as a model's code calls it whatever the layer is.
#[differentiable(dyn)]
pub trait Module {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64>;

    /// A provided method, differentiated too (a layer may override it).
    fn energy(&self, x: &Tensor<f64>) -> Tensor<f64> {
        let y = self.forward(x);
        (&y * &y).mean()
    }

    /// A method the attribute leaves alone; the box calls the layer's.
    fn describe(&self) -> String;
}

#[derive(Clone, Differentiable)]
pub struct Linear {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

#[differentiable]
impl Module for Linear {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        (x.matmul(&self.w) + &self.b).tanh()
    }

    fn describe(&self) -> String {
        format!("Linear({:?})", self.w.shape())
    }
}

/// `x * sigmoid(x * g)`, elementwise, with its own `energy`.
#[derive(Clone, Differentiable)]
pub struct Gated {
    g: Tensor<f64>,
}

#[differentiable]
impl Module for Gated {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x * &(x * &self.g).sigmoid()
    }

    fn energy(&self, x: &Tensor<f64>) -> Tensor<f64> {
        self.forward(x).abs().sum()
    }

    fn describe(&self) -> String {
        "Gated".to_string()
    }
}

/// `x + inner(x)` for any module: a generic impl, boxed too.
#[derive(Clone, Differentiable)]
pub struct Residual<M> {
    inner: M,
}

#[differentiable]
impl<M: Module + Differentiable> Module for Residual<M> {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x + &self.inner.forward(x)
    }

    fn describe(&self) -> String {
        format!("Residual({})", self.inner.describe())
    }
}

/// A stack of boxed modules, itself a module (so stacks nest).
#[derive(Clone, Differentiable)]
pub struct Sequential {
    layers: Vec<Box<dyn Module>>,
}

#[differentiable]
impl Module for Sequential {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        let mut h = x.clone();
        for layer in &self.layers {
            h = layer.forward(&h);
        }
        h
    }

    fn describe(&self) -> String {
        let inner: Vec<String> = self.layers.iter().map(|l| l.describe()).collect();
        format!("Sequential[{}]", inner.join(", "))
    }
}

#[differentiable]
fn mse(model: &Sequential, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
    let d = model.forward(x) - y;
    (&d * &d).mean()
}

/// The energy of every layer of a stack, summed: the provided method through the boxes.
#[differentiable]
fn energies(model: &Sequential, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let mut total = Tensor::scalar(0.0);
    for layer in &model.layers {
        total += layer.energy(x);
    }
    total
}

/// The model of [`stack`], written with concrete types.
#[derive(Clone, Differentiable)]
pub struct Concrete {
    first: Linear,
    nested_first: Gated,
    nested_second: Linear,
    residual: Residual<Linear>,
}

#[differentiable]
fn concrete_mse(
    model: &Concrete,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    let h = model.first.forward(x);
    let h = model.nested_second.forward(&model.nested_first.forward(&h));
    let d = model.residual.forward(&h) - y;
    (&d * &d).mean()
}

fn linear(seed: u64) -> Linear {
    Linear {
        w: Tensor::rand_normal(&[3, 3], 0.0, 0.6, seed),
        b: Tensor::rand_normal(&[3], 0.0, 0.3, seed + 1),
    }
}

fn gated(seed: u64) -> Gated {
    Gated {
        g: Tensor::rand_normal(&[3], 0.0, 1.0, seed),
    }
}

fn concrete() -> Concrete {
    Concrete {
        first: linear(1),
        nested_first: gated(3),
        nested_second: linear(5),
        residual: Residual { inner: linear(7) },
    }
}

/// [`concrete`], boxed: a linear layer, a nested stack and a residual block in one `Vec`.
fn stack() -> Sequential {
    let c = concrete();
    Sequential {
        layers: vec![
            Box::new(c.first),
            Box::new(Sequential {
                layers: vec![Box::new(c.nested_first), Box::new(c.nested_second)],
            }),
            Box::new(c.residual),
        ],
    }
}

fn data() -> (Tensor<f64>, Tensor<f64>) {
    (
        Tensor::rand_normal(&[5, 3], 0.0, 1.0, 11),
        Tensor::rand_normal(&[5, 3], 0.0, 1.0, 12),
    )
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-12 * w.abs().max(1.0),
            "{what}: {g} against {w}"
        );
    }
}

#[test]
fn a_stack_of_boxed_layers_has_every_variant() {
    let (x, y) = data();
    let model = stack();
    assert_eq!(
        model.describe(),
        "Sequential[Linear([3, 3]), Sequential[Gated, Linear([3, 3])], Residual(Linear([3, 3]))]"
    );
    check_variants!(
        mse,
        mse_value_and_grad,
        mse_grad,
        mse_vjp,
        mse_jvp,
        mse_pullback;
        [model];
        (&model, &x, &y)
    );
}

#[test]
fn the_gradient_through_boxes_is_the_concrete_models() {
    let (x, y) = data();
    let (value, grad) = mse_value_and_grad(&stack(), &x, &y);
    let (want_value, want) = concrete_mse_value_and_grad(&concrete(), &x, &y);
    assert_eq!(value.item(), want_value.item());
    // The gradient of a box is a box holding the layer's gradient, of the layer's type.
    let first = grad.layers[0].downcast_ref::<Linear>().expect("a Linear");
    assert_close(&first.w.to_vec(), &want.first.w.to_vec(), "first.w");
    let nested = grad.layers[1]
        .downcast_ref::<Sequential>()
        .expect("a stack");
    let gate = nested.layers[0].downcast_ref::<Gated>().expect("a Gated");
    assert_close(&gate.g.to_vec(), &want.nested_first.g.to_vec(), "gate.g");
    let residual = grad.layers[2]
        .downcast_ref::<Residual<Linear>>()
        .expect("a residual block");
    assert_close(
        &residual.inner.b.to_vec(),
        &want.residual.inner.b.to_vec(),
        "residual.inner.b",
    );
    assert!(grad.layers[2].downcast_ref::<Linear>().is_none());
    // Leaves and their names come in the order of the layers.
    let paths = grad.leaf_paths("model");
    assert_eq!(paths[0], "model.layers[0].w");
    assert_eq!(paths[2], "model.layers[1].layers[0].g");
    assert_eq!(paths[5], "model.layers[2].inner.w");
    let all: Vec<f64> = grad.leaves().iter().flat_map(|l| l.to_vec()).collect();
    let all_want: Vec<f64> = want.leaves().iter().flat_map(|l| l.to_vec()).collect();
    assert_close(&all, &all_want, "every leaf");
}

#[test]
fn a_provided_method_through_boxes_has_every_variant() {
    let (x, _) = data();
    let model = stack();
    check_variants!(
        energies,
        energies_value_and_grad,
        energies_grad,
        energies_vjp,
        energies_jvp,
        energies_pullback;
        [model];
        (&model, &x)
    );
    // `Gated` overrides `energy`, and the box runs the override: Σ|y| inside the nested stack's
    // own energy is not it, but the nested stack's is the mean of the square of its output.
    let nested: &dyn Module = &*model.layers[1];
    let out = nested.forward(&x);
    assert_eq!(nested.energy(&x).item(), (&out * &out).mean().item());
    let gate = gated(3);
    assert_eq!(
        model.layers[1].downcast_ref::<Sequential>().unwrap().layers[0]
            .energy(&x)
            .item(),
        gate.forward(&x).abs().sum().item()
    );
}

#[test]
fn a_box_has_the_traits_entry_points() {
    let (x, _) = data();
    let boxed: Box<dyn Module> = Box::new(stack());
    let cotangent = Tensor::rand_normal(&[5, 3], 0.0, 1.0, 21);
    let (value, (grad, x_grad)) = Module::forward_vjp(&boxed, &x, &cotangent);
    assert_eq!(value.to_vec(), boxed.forward(&x).to_vec());
    // The dot-product test through the box: ⟨J (t_model, t_x), c⟩ = ⟨(t_model, t_x), Jᵀ c⟩.
    let mut tangent = boxed.zeros_like();
    for (i, leaf) in tangent.leaves_mut().into_iter().enumerate() {
        *leaf = Tensor::rand_normal(leaf.shape(), 0.0, 1.0, 100 + i as u64);
    }
    let x_tangent = Tensor::rand_normal(&[5, 3], 0.0, 1.0, 31);
    let (jvp_value, out_tangent) = Module::forward_jvp(&boxed, &x, &tangent, &x_tangent);
    assert_eq!(jvp_value.to_vec(), value.to_vec());
    let lhs = (&out_tangent * &cotangent).sum().item();
    let mut rhs = (&x_tangent * &x_grad).sum().item();
    for (t, g) in tangent.leaves().into_iter().zip(grad.leaves()) {
        rhs += (t * g).sum().item();
    }
    assert!(
        (lhs - rhs).abs() <= 1e-10 * lhs.abs().max(1.0),
        "{lhs} against {rhs}"
    );
}

#[test]
#[should_panic(expected = "holds another type")]
fn a_tangent_of_another_layer_type_is_refused() {
    let (x, _) = data();
    let boxed: Box<dyn Module> = Box::new(linear(41));
    let wrong: Box<dyn Module> = Box::new(gated(43));
    let _ = Module::forward_jvp(&boxed, &x, &wrong, &x);
}

#[test]
fn training_a_stack_of_boxes_lowers_its_loss() {
    let (x, _) = data();
    let y = (&x * 0.5).tanh();
    let mut model = stack();
    let mut opt = Sgd::new(0.2);
    let first = mse(&model, &x, &y).item();
    for _ in 0..50 {
        let grads = mse_grad(&model, &x, &y);
        opt.step(&mut model, &grads);
    }
    let last = mse(&model, &x, &y).item();
    assert!(last < 0.5 * first, "{first} -> {last}");
}

/// A recurrent cell behind a box: two tensors in, two out.
#[differentiable(dyn)]
pub trait Cell {
    fn step(&self, x: &Tensor<f64>, h: &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>);
}

#[derive(Clone, Differentiable)]
pub struct Elman {
    wx: Tensor<f64>,
    wh: Tensor<f64>,
}

#[differentiable]
impl Cell for Elman {
    fn step(&self, x: &Tensor<f64>, h: &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>) {
        let next = (x.matmul(&self.wx) + h.matmul(&self.wh)).tanh();
        (next.clone(), next.sum_axes(&[1], false))
    }
}

#[derive(Clone, Differentiable)]
pub struct Leaky {
    rate: Tensor<f64>,
}

#[differentiable]
impl Cell for Leaky {
    fn step(&self, x: &Tensor<f64>, h: &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>) {
        let a = self.rate.sigmoid();
        let next = h * &(1.0 - &a) + &(x * &a);
        let out = next.sin().sum_axes(&[1], false);
        (next, out)
    }
}

#[derive(Clone, Differentiable)]
pub struct Rnn {
    cells: Vec<Box<dyn Cell>>,
}

#[differentiable]
fn rnn_loss(rnn: &Rnn, #[nodiff] xs: &Tensor<f64>, h0: &Tensor<f64>) -> Tensor<f64> {
    let mut h = h0.clone();
    let mut total = Tensor::scalar(0.0);
    for t in 0..3 {
        let x = xs.shrink(&[(t, t + 1), (0, 2), (0, 3)]).reshape(&[2, 3]);
        for cell in &rnn.cells {
            let (next, out) = cell.step(&x, &h);
            h = next;
            total += (&out * &out).sum();
        }
    }
    total
}

#[test]
fn an_unrolled_boxed_cell_has_every_variant() {
    let rnn = Rnn {
        cells: vec![
            Box::new(Elman {
                wx: Tensor::rand_normal(&[3, 3], 0.0, 0.5, 51),
                wh: Tensor::rand_normal(&[3, 3], 0.0, 0.5, 52),
            }),
            Box::new(Leaky {
                rate: Tensor::rand_normal(&[3], 0.0, 1.0, 53),
            }),
        ],
    };
    let xs = Tensor::rand_normal(&[3, 2, 3], 0.0, 1.0, 54);
    let h0 = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 55);
    check_variants!(
        rnn_loss,
        rnn_loss_value_and_grad,
        rnn_loss_grad,
        rnn_loss_vjp,
        rnn_loss_jvp,
        rnn_loss_pullback;
        [rnn, h0];
        (&rnn, &xs, &h0)
    );
}
