//! `#[differentiable(vmap)]`: each batched entry point against the same function called once
//! per example, and against finite differences.

use rune_ad::prelude::*;

mod support;
use support::{assert_close, example};

/// One example's squared error of a two-layer network: `x` is one input vector.
#[differentiable(vmap)]
fn mlp_loss(
    w1: &Tensor<f64>,
    b1: &Tensor<f64>,
    w2: &Tensor<f64>,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    let h = (x.matmul(w1) + b1).tanh();
    let o = h.matmul(w2);
    let d = &o - y;
    (&d * &d).sum()
}

struct Mlp {
    w1: Tensor<f64>,
    b1: Tensor<f64>,
    w2: Tensor<f64>,
    xs: Tensor<f64>,
    ys: Tensor<f64>,
}

fn mlp() -> Mlp {
    Mlp {
        w1: Tensor::rand_uniform(&[4, 5], -0.5, 0.5, 1),
        b1: Tensor::rand_uniform(&[5], -0.1, 0.1, 2),
        w2: Tensor::rand_uniform(&[5, 3], -0.5, 0.5, 3),
        xs: Tensor::rand_uniform(&[6, 4], 0.0, 1.0, 4),
        ys: Tensor::rand_uniform(&[6, 3], 0.0, 1.0, 5),
    }
}

#[test]
fn vmap_of_a_loss_is_the_loss_of_each_example() {
    let m = mlp();
    let batched = mlp_loss_vmap(&m.w1, &m.b1, &m.w2, Batch(&m.xs), Batch(&m.ys));
    assert_eq!(batched.shape(), &[6]);
    for i in 0..6 {
        let one = mlp_loss(&m.w1, &m.b1, &m.w2, &example(&m.xs, i), &example(&m.ys, i));
        assert_close(&example(&batched, i), &one, 1e-12, "value");
    }
}

#[test]
fn per_example_gradients_are_the_gradients_of_each_example() {
    let m = mlp();
    let (values, (g1, gb, g2)) =
        mlp_loss_value_and_grad_vmap(&m.w1, &m.b1, &m.w2, Batch(&m.xs), Batch(&m.ys));
    let (h1, hb, h2) = mlp_loss_grad_vmap(&m.w1, &m.b1, &m.w2, Batch(&m.xs), Batch(&m.ys));
    assert_eq!(g1.shape(), &[6, 4, 5]);
    assert_eq!(gb.shape(), &[6, 5]);
    assert_eq!(g2.shape(), &[6, 5, 3]);
    for i in 0..6 {
        let (x, y) = (example(&m.xs, i), example(&m.ys, i));
        let (v, (e1, eb, e2)) = mlp_loss_value_and_grad(&m.w1, &m.b1, &m.w2, &x, &y);
        assert_close(&example(&values, i), &v, 1e-12, "value");
        assert_close(&example(&g1, i), &e1, 1e-12, "w1");
        assert_close(&example(&gb, i), &eb, 1e-12, "b1");
        assert_close(&example(&g2, i), &e2, 1e-12, "w2");
        assert_close(&example(&h1, i), &e1, 1e-12, "w1 (grad)");
        assert_close(&example(&hb, i), &eb, 1e-12, "b1 (grad)");
        assert_close(&example(&h2, i), &e2, 1e-12, "w2 (grad)");
        // And against central differences, one weight.
        let eps = 1e-6;
        let shifted = |d: f64| {
            let mut w = m.w1.to_vec();
            w[7] += d;
            let w = Tensor::from_vec(w, &[4, 5]);
            mlp_loss(&w, &m.b1, &m.w2, &x, &y).item()
        };
        let fd = (shifted(eps) - shifted(-eps)) / (2.0 * eps);
        assert!((example(&g1, i).to_vec()[7] - fd).abs() < 1e-7);
    }
    // The mean of the per-example gradients is the gradient of the mean loss.
    let summed = g1.sum_axes(&[0], false);
    let mut total = Tensor::zeros(&[4, 5]);
    for i in 0..6 {
        let (x, y) = (example(&m.xs, i), example(&m.ys, i));
        total = &total + &mlp_loss_grad(&m.w1, &m.b1, &m.w2, &x, &y).0;
    }
    assert_close(&summed, &total, 1e-12, "sum of per-example gradients");
}

/// A batch of weights against one input: in_axes on a differentiated argument.
#[test]
fn batched_weights_and_a_shared_input() {
    let m = mlp();
    let w1s = Tensor::rand_uniform(&[3, 4, 5], -0.5, 0.5, 9);
    let x = example(&m.xs, 0);
    let y = example(&m.ys, 0);
    let (values, (g1, gb, _)) = mlp_loss_value_and_grad_vmap(Batch(&w1s), &m.b1, &m.w2, &x, &y);
    for i in 0..3 {
        let (v, (e1, eb, _)) = mlp_loss_value_and_grad(&example(&w1s, i), &m.b1, &m.w2, &x, &y);
        assert_close(&example(&values, i), &v, 1e-12, "value");
        assert_close(&example(&g1, i), &e1, 1e-12, "w1");
        assert_close(&example(&gb, i), &eb, 1e-12, "b1");
    }
}

/// A small ODE integrated with a loop, then normalised: the state turns batched in the first
/// step when only the rates are batched.
#[differentiable(vmap)]
fn rollout(y0: &Tensor<f32>, k: &Tensor<f32>, #[nodiff] steps: usize) -> Tensor<f32> {
    let mut y = y0.clone();
    for _ in 0..steps {
        let dy = -(&y * k) + y.sin();
        y = &y + &(dy * 0.1);
    }
    let p = y.softmax(-1);
    let big = p.gt(0.3);
    let q = where_cond(&big, &p, &(&p * 2.0));
    q.reshape(&[-1]).sum_axes(&[0], false) + y.mean() + p.max_axes(&[0], false)
}

#[test]
fn loops_reductions_and_selects_batch_in_f32() {
    let y0 = Tensor::from_vec(vec![0.5f32, -0.2, 0.9], &[3]);
    let ks = Tensor::<f32>::rand_uniform(&[5, 3], 0.1, 2.0, 7);
    let values = rollout_vmap(&y0, Batch(&ks), 4);
    let grads = rollout_grad_vmap(&y0, Batch(&ks), 4);
    assert_eq!(grads.0.shape(), &[5, 3]);
    for i in 0..5 {
        let k = example(&ks, i);
        assert_close(&example(&values, i), &rollout(&y0, &k, 4), 1e-6, "value");
        let (gy, gk) = rollout_grad(&y0, &k, 4);
        assert_close(&example(&grads.0, i), &gy, 1e-5, "y0");
        assert_close(&example(&grads.1, i), &gk, 1e-5, "k");
    }
}

/// A function of a vector: its Jacobian from one batched VJP (rows) and one batched JVP
/// (columns), with the identity as the batch of cotangents and tangents.
#[differentiable(vmap)]
fn field(x: &Tensor<f64>, #[nodiff] a: &Tensor<f64>) -> Tensor<f64> {
    a.matmul(x).tanh() * x
}

#[test]
fn jacobians_from_batched_vjp_and_jvp() {
    let n = 4;
    let a = Tensor::rand_uniform(&[n, n], -1.0, 1.0, 11);
    let x = Tensor::rand_uniform(&[n], -1.0, 1.0, 12);
    let eye = Tensor::<f64>::eye(n);
    let (values, rows) = field_vjp_vmap(&x, &a, Batch(&eye));
    let (_, columns) = field_jvp_vmap(&x, &a, Batch(&eye));
    assert_eq!(values.shape(), &[n, n]);
    let loop_jac = jacrev(|x, ct| field_vjp(x, &a, ct).1, &x, &[n]);
    assert_close(&rows, &loop_jac, 1e-12, "jacrev");
    assert_close(&columns.t(), &loop_jac, 1e-12, "jacfwd");
    let by_rows = jacrev_vmap(|x, ws| field_vjp_vmap(x, &a, Batch(ws)).1, &x, &[n]);
    let by_columns = jacfwd_vmap(|x, vs| field_jvp_vmap(x, &a, Batch(vs)).1, &x);
    assert_close(&by_rows, &loop_jac, 1e-12, "jacrev_vmap");
    assert_close(&by_columns, &loop_jac, 1e-12, "jacfwd_vmap");
    // Finite differences of column 2.
    let eps = 1e-6;
    let mut up = x.to_vec();
    let mut down = x.to_vec();
    up[2] += eps;
    down[2] -= eps;
    let fd = (field(&Tensor::from_vec(up, &[n]), &a) - field(&Tensor::from_vec(down, &[n]), &a))
        / (2.0 * eps);
    assert_close(&example(&columns, 2), &fd, 1e-7, "finite differences");
}

/// Constants of a model that are not differentiated: a frame and a bias.
struct Frame {
    axes: Tensor<f64>,
    bias: Tensor<f64>,
}

/// Tensors held as written (a `#[nodiff]` structure's fields, a constant made in the body) with
/// more axes than a batched value's examples: each example's scalar scales the whole `[3, 3]`
/// frame, by an operator, a method and `where_cond`.
#[differentiable(vmap)]
fn scaled_frame(theta: &Tensor<f64>, #[nodiff] frame: &Frame) -> Tensor<f64> {
    let power = 2;
    let cos = (theta * theta).sum().sqrt().cos().powi(power - 1);
    let eye = Tensor::<f64>::eye(3);
    let turned = &frame.axes * &cos + &eye * (&cos * 2.0);
    let shifted = frame.bias.maximum(&cos);
    where_cond(&turned.gt(0.0), &turned, &shifted) * 2.0
}

#[test]
fn shared_tensors_of_more_axes_line_up_with_the_examples() {
    let frame = Frame {
        axes: Tensor::rand_uniform(&[3, 3], -1.0, 1.0, 31),
        bias: Tensor::rand_uniform(&[3, 3], -1.0, 1.0, 32),
    };
    // A batch of 3 is the length of the frame's axes, where a misaligned broadcast would not
    // fail but pair each example with a column.
    for n in [3, 4] {
        let thetas = Tensor::rand_uniform(&[n, 2], -2.0, 2.0, 33 + n as u64);
        let directions = Tensor::rand_uniform(&[n, 2], -1.0, 1.0, 43 + n as u64);
        let values = scaled_frame_vmap(Batch(&thetas), &frame);
        let (tangent_values, tangents) =
            scaled_frame_jvp_vmap(Batch(&thetas), &frame, Batch(&directions));
        assert_eq!(values.shape(), &[n, 3, 3]);
        for i in 0..n {
            let theta = example(&thetas, i);
            let want = scaled_frame(&theta, &frame);
            assert_close(&example(&values, i), &want, 1e-12, "f_vmap");
            assert_close(
                &example(&tangent_values, i),
                &want,
                1e-12,
                "f_jvp_vmap value",
            );
            let (_, tangent) = scaled_frame_jvp(&theta, &frame, &example(&directions, i));
            assert_close(
                &example(&tangents, i),
                &tangent,
                1e-12,
                "f_jvp_vmap tangent",
            );
        }
    }
}

/// A model as a structure: its gradient, per example, is a structure of batched leaves.
#[derive(Clone, Differentiable)]
struct Net {
    w1: Tensor<f32>,
    b1: Tensor<f32>,
    w2: Tensor<f32>,
}

#[differentiable(vmap)]
fn net_loss(net: &Net, #[nodiff] x: &Tensor<f32>, #[nodiff] y: &Tensor<f32>) -> Tensor<f32> {
    let mut h = x.clone();
    for _ in 0..2 {
        h = (h.matmul(&net.w1) + &net.b1).tanh();
    }
    let d = h.matmul(&net.w2) - y;
    d.square().mean()
}

fn net(seed: u64) -> Net {
    Net {
        w1: Tensor::rand_uniform(&[3, 3], -0.8, 0.8, seed),
        b1: Tensor::rand_uniform(&[3], -0.1, 0.1, seed + 1),
        w2: Tensor::rand_uniform(&[3, 2], -0.8, 0.8, seed + 2),
    }
}

#[test]
fn per_example_gradients_of_a_structure() {
    let model = net(20);
    let xs = Tensor::<f32>::rand_uniform(&[7, 3], -1.0, 1.0, 30);
    let ys = Tensor::<f32>::rand_uniform(&[7, 2], -1.0, 1.0, 31);
    let grads = net_loss_grad_vmap(&model, Batch(&xs), Batch(&ys));
    assert_eq!(grads.w1.shape(), &[7, 3, 3]);
    assert_eq!(grads.b1.shape(), &[7, 3]);
    for i in 0..7 {
        let g = net_loss_grad(&model, &example(&xs, i), &example(&ys, i));
        assert_close(&example(&grads.w1, i), &g.w1, 1e-5, "w1");
        assert_close(&example(&grads.b1, i), &g.b1, 1e-5, "b1");
        assert_close(&example(&grads.w2, i), &g.w2, 1e-5, "w2");
    }
}

/// An ensemble: a batch of models (each leaf stacked) on one shared input.
#[test]
fn an_ensemble_of_models_on_one_input() {
    let members: Vec<Net> = (0..4).map(|k| net(40 + 10 * k)).collect();
    let stack = |leaf: fn(&Net) -> &Tensor<f32>| {
        let parts: Vec<&Tensor<f32>> = members.iter().map(leaf).collect();
        stack(&parts, 0)
    };
    let ensemble = Net {
        w1: stack(|n| &n.w1),
        b1: stack(|n| &n.b1),
        w2: stack(|n| &n.w2),
    };
    let x = Tensor::<f32>::from_vec(vec![0.3, -0.7, 0.9], &[3]);
    let y = Tensor::<f32>::from_vec(vec![0.1, 0.2], &[2]);
    let (losses, grads) = net_loss_value_and_grad_vmap(Batch(&ensemble), &x, &y);
    assert_eq!(losses.shape(), &[4]);
    for (k, member) in members.iter().enumerate() {
        let (v, g) = net_loss_value_and_grad(member, &x, &y);
        assert_close(&example(&losses, k), &v, 1e-6, "loss");
        assert_close(&example(&grads.w1, k), &g.w1, 1e-5, "w1");
        assert_close(&example(&grads.w2, k), &g.w2, 1e-5, "w2");
    }
    // Forward mode along a batch of directions for the ensemble.
    let dirs = Net {
        w1: Tensor::ones(&[4, 3, 3]),
        b1: Tensor::zeros(&[4, 3]),
        w2: Tensor::zeros(&[4, 3, 2]),
    };
    let (_, slopes) = net_loss_jvp_vmap(Batch(&ensemble), &x, &y, Batch(&dirs));
    for (k, member) in members.iter().enumerate() {
        let d = Net {
            w1: Tensor::ones(&[3, 3]),
            b1: Tensor::zeros(&[3]),
            w2: Tensor::zeros(&[3, 2]),
        };
        let (_, slope) = net_loss_jvp(member, &x, &y, &d);
        assert_close(&example(&slopes, k), &slope, 1e-5, "slope");
    }
}

/// A helper batched with its caller: calls of `#[differentiable(vmap)]` functions are batched.
#[differentiable(vmap)]
fn layer(h: &Tensor<f64>, w: &Tensor<f64>) -> Tensor<f64> {
    h.matmul(w).tanh()
}

#[differentiable(vmap)]
fn two_layers(w1: &Tensor<f64>, w2: &Tensor<f64>, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let h = layer(x, w1);
    layer(&h, w2).sum()
}

#[test]
fn calls_of_batched_functions() {
    let w1 = Tensor::rand_uniform(&[3, 4], -1.0, 1.0, 50);
    let w2 = Tensor::rand_uniform(&[4, 2], -1.0, 1.0, 51);
    let xs = Tensor::rand_uniform(&[5, 3], -1.0, 1.0, 52);
    let (values, (g1, g2)) = two_layers_value_and_grad_vmap(&w1, &w2, Batch(&xs));
    for i in 0..5 {
        let x = example(&xs, i);
        let (v, (e1, e2)) = two_layers_value_and_grad(&w1, &w2, &x);
        assert_close(&example(&values, i), &v, 1e-12, "value");
        assert_close(&example(&g1, i), &e1, 1e-12, "w1");
        assert_close(&example(&g2, i), &e2, 1e-12, "w2");
    }
}

/// Layers as methods: a model's method calls its layers' methods, each batched.
mod layers {
    use super::*;

    #[derive(Clone, Differentiable)]
    pub struct Dense {
        pub w: Tensor<f64>,
        pub b: Tensor<f64>,
    }

    impl Dense {
        #[differentiable(vmap)]
        pub fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
            (x.matmul(&self.w) + &self.b).tanh()
        }
    }

    #[derive(Clone, Differentiable)]
    pub struct Two {
        pub l1: Dense,
        pub l2: Dense,
    }

    #[differentiable]
    impl Two {
        #[differentiable(vmap)]
        pub fn loss(&self, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
            let h = self.l1.forward(x);
            (self.l2.forward(&h) - y).square().sum()
        }
    }
}

#[test]
fn per_example_gradients_through_methods() {
    use layers::{Dense, Two};
    let dense = |seed: u64, i: usize, o: usize| Dense {
        w: Tensor::rand_uniform(&[i, o], -1.0, 1.0, seed),
        b: Tensor::rand_uniform(&[o], -0.1, 0.1, seed + 1),
    };
    let model = Two {
        l1: dense(60, 3, 4),
        l2: dense(62, 4, 2),
    };
    let xs = Tensor::rand_uniform(&[6, 3], -1.0, 1.0, 64);
    let ys = Tensor::rand_uniform(&[6, 2], -1.0, 1.0, 65);
    let (values, grads) = model.loss_value_and_grad_vmap(Batch(&xs), Batch(&ys));
    assert_eq!(grads.l1.w.shape(), &[6, 3, 4]);
    for i in 0..6 {
        let (x, y) = (example(&xs, i), example(&ys, i));
        let (v, g) = model.loss_value_and_grad(&x, &y);
        assert_close(&example(&values, i), &v, 1e-12, "value");
        assert_close(&example(&grads.l1.w, i), &g.l1.w, 1e-12, "l1.w");
        assert_close(&example(&grads.l2.b, i), &g.l2.b, 1e-12, "l2.b");
    }
    let hs = model.l1.forward_vmap(Batch(&xs));
    for i in 0..6 {
        assert_close(
            &example(&hs, i),
            &model.l1.forward(&example(&xs, i)),
            1e-12,
            "layer",
        );
    }
}

/// The gradient of a function of a batch: a loss calling the batched `mlp_loss_vmap`.
#[differentiable]
fn mean_of_batch(
    w1: &Tensor<f64>,
    b1: &Tensor<f64>,
    w2: &Tensor<f64>,
    #[nodiff] xs: &Tensor<f64>,
    #[nodiff] ys: &Tensor<f64>,
) -> Tensor<f64> {
    let losses = mlp_loss_vmap(w1, b1, w2, Batch(xs), Batch(ys));
    losses.mean()
}

#[test]
fn gradient_of_a_batched_call() {
    let m = mlp();
    let (value, (g1, gb, g2)) = mean_of_batch_value_and_grad(&m.w1, &m.b1, &m.w2, &m.xs, &m.ys);
    // The same as the mean of the per-example gradients.
    let (h1, hb, h2) = mlp_loss_grad_vmap(&m.w1, &m.b1, &m.w2, Batch(&m.xs), Batch(&m.ys));
    let losses = mlp_loss_vmap(&m.w1, &m.b1, &m.w2, Batch(&m.xs), Batch(&m.ys));
    assert_close(&value, &losses.mean(), 1e-12, "value");
    assert_close(&g1, &h1.mean_axes(&[0], false), 1e-12, "w1");
    assert_close(&gb, &hb.mean_axes(&[0], false), 1e-12, "b1");
    assert_close(&g2, &h2.mean_axes(&[0], false), 1e-12, "w2");
    // Forward mode through the batched call, against central differences.
    let dir = Tensor::rand_uniform(&[4, 5], -1.0, 1.0, 70);
    let (_, slope) = mean_of_batch_jvp(
        &m.w1,
        &m.b1,
        &m.w2,
        &m.xs,
        &m.ys,
        &dir,
        &Tensor::zeros(&[5]),
        &Tensor::zeros(&[5, 3]),
    );
    let eps = 1e-6;
    let at = |s: f64| mean_of_batch(&(&m.w1 + &(&dir * s)), &m.b1, &m.w2, &m.xs, &m.ys).item();
    let fd = (at(eps) - at(-eps)) / (2.0 * eps);
    assert!((slope.item() - fd).abs() < 1e-7, "{} vs {fd}", slope.item());
}

/// A function generic over its element type, batched in f32 and f64.
#[differentiable(vmap)]
fn soft_dot<T: Element>(w: &Tensor<T>, #[nodiff] x: &Tensor<T>) -> Tensor<T> {
    let z = (x * w).sum();
    z.tanh() + x.softmax(0).max()
}

#[test]
fn a_generic_function_batches_in_both_element_types() {
    let xs = Tensor::<f64>::rand_uniform(&[4, 3], -1.0, 1.0, 80);
    let w = Tensor::<f64>::rand_uniform(&[3], -1.0, 1.0, 81);
    let (values, grads) = soft_dot_value_and_grad_vmap(&w, Batch(&xs));
    let (values32, grads32) =
        soft_dot_value_and_grad_vmap(w.cast::<f32>(), Batch(xs.cast::<f32>()));
    for i in 0..4 {
        let x = example(&xs, i);
        let (v, g) = soft_dot_value_and_grad(&w, &x);
        assert_close(&example(&values, i), &v, 1e-12, "value");
        assert_close(&example(&grads, i), &g, 1e-12, "grad");
        assert_close(&example(&values32, i), &v.cast::<f32>(), 1e-5, "value f32");
        assert_close(&example(&grads32, i), &g.cast::<f32>(), 1e-5, "grad f32");
    }
}

/// Lists of tensors: a shared tensor joins batched ones.
#[differentiable(vmap)]
fn joined(x: &Tensor<f64>, bias: &Tensor<f64>) -> Tensor<f64> {
    let both = concat(&[x, bias], 0);
    let rows = stack(&[&both, &both.tanh()], -1);
    rows.sum_axes(&[1], false).square().sum()
}

#[test]
fn concat_and_stack_batch() {
    let xs = Tensor::<f64>::rand_uniform(&[3, 2], -1.0, 1.0, 90);
    let bias = Tensor::<f64>::rand_uniform(&[4], -1.0, 1.0, 91);
    let (values, (gx, gb)) = joined_value_and_grad_vmap(Batch(&xs), &bias);
    assert_eq!(gb.shape(), &[3, 4]);
    for i in 0..3 {
        let x = example(&xs, i);
        let (v, (ex, eb)) = joined_value_and_grad(&x, &bias);
        assert_close(&example(&values, i), &v, 1e-12, "value");
        assert_close(&example(&gx, i), &ex, 1e-12, "x");
        assert_close(&example(&gb, i), &eb, 1e-12, "bias");
    }
}

/// A layer of a deep model, batched with the model.
#[derive(Clone, Differentiable)]
struct Dense {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

impl Dense {
    #[differentiable(vmap)]
    fn forward(&self, h: &Tensor<f64>) -> Tensor<f64> {
        (h.matmul(&self.w) + &self.b).tanh()
    }
}

#[derive(Clone, Differentiable)]
struct Deep {
    layers: Vec<Dense>,
    scales: Vec<Tensor<f64>>,
}

impl Deep {
    /// A method looping over its own layers.
    #[differentiable(vmap)]
    fn predict(&self, x: &Tensor<f64>) -> Tensor<f64> {
        let mut h = x.clone();
        for layer in &self.layers {
            h = layer.forward(&h);
        }
        h
    }
}

/// Loops over a model's layers: by reference, zipped, enumerated, reversed and indexed.
#[differentiable(vmap)]
fn deep_loss(model: &Deep, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let mut h = x.clone();
    for (i, (layer, scale)) in model.layers.iter().zip(&model.scales).enumerate() {
        h = layer.forward(&h) * scale + (i as f64) * 0.1;
    }
    for layer in model.layers.iter().rev() {
        h *= layer.b.mean();
    }
    let last = &model.layers[model.layers.len() - 1];
    let mut penalty = last.w.square().sum();
    for k in 0..model.layers.len() {
        penalty += model.layers[k].b.square().sum() / (h.len() as f64);
    }
    h.square().sum() + penalty
}

fn deep(seed: u64) -> Deep {
    let dense = |k: u64| Dense {
        w: Tensor::rand_uniform(&[3, 3], -0.8, 0.8, seed + 2 * k),
        b: Tensor::rand_uniform(&[3], 0.2, 0.9, seed + 2 * k + 1),
    };
    Deep {
        layers: (0..3).map(dense).collect(),
        scales: (0..3)
            .map(|k| Tensor::rand_uniform(&[3], 0.5, 1.5, seed + 20 + k))
            .collect(),
    }
}

#[test]
fn loops_over_the_layers_of_a_model() {
    let model = deep(60);
    let xs = Tensor::<f64>::rand_uniform(&[5, 3], -1.0, 1.0, 70);
    let values = deep_loss_vmap(&model, Batch(&xs));
    let grads = deep_loss_grad_vmap(&model, Batch(&xs));
    assert_eq!(grads.layers[1].w.shape(), &[5, 3, 3]);
    for i in 0..5 {
        let x = example(&xs, i);
        assert_close(&example(&values, i), &deep_loss(&model, &x), 1e-12, "value");
        let g = deep_loss_grad(&model, &x);
        for (got, expected) in grads.layers.iter().zip(&g.layers) {
            assert_close(&example(&got.w, i), &expected.w, 1e-12, "w");
            assert_close(&example(&got.b, i), &expected.b, 1e-12, "b");
        }
        for (got, expected) in grads.scales.iter().zip(&g.scales) {
            assert_close(&example(got, i), expected, 1e-12, "scale");
        }
        // Central differences of one weight of the middle layer.
        let eps = 1e-6;
        let shifted = |d: f64| {
            let mut m = model.clone();
            let mut w = m.layers[1].w.to_vec();
            w[4] += d;
            m.layers[1].w = Tensor::from_vec(w, &[3, 3]);
            deep_loss(&m, &x).item()
        };
        let fd = (shifted(eps) - shifted(-eps)) / (2.0 * eps);
        assert!((example(&grads.layers[1].w, i).to_vec()[4] - fd).abs() < 1e-7);
    }
    // A method over its own layers, with per-example gradients in the input.
    let (outs, dx) = model.predict_vjp_vmap(Batch(&xs), Tensor::ones(&[3]));
    for i in 0..5 {
        let (out, d) = model.predict_vjp(&example(&xs, i), &Tensor::ones(&[3]));
        assert_close(&example(&outs, i), &out, 1e-12, "predict");
        assert_close(&example(&dx.1, i), &d.1, 1e-12, "predict dx");
        let (got, expected) = (&dx.0.layers[2].w, &d.0.layers[2].w);
        assert_close(&example(got, i), expected, 1e-12, "predict dw");
    }
    // An ensemble of deep models, each leaf stacked.
    let members: Vec<Deep> = (0..2).map(|k| deep(80 + 40 * k)).collect();
    let stacked = |leaf: &dyn Fn(&Deep) -> &Tensor<f64>| {
        stack(&members.iter().map(leaf).collect::<Vec<_>>(), 0)
    };
    let ensemble = Deep {
        layers: (0..3)
            .map(|k| Dense {
                w: stacked(&|m| &m.layers[k].w),
                b: stacked(&|m| &m.layers[k].b),
            })
            .collect(),
        scales: (0..3).map(|k| stacked(&|m| &m.scales[k])).collect(),
    };
    let x = example(&xs, 0);
    let losses = deep_loss_vmap(Batch(&ensemble), &x);
    for (k, member) in members.iter().enumerate() {
        assert_close(
            &example(&losses, k),
            &deep_loss(member, &x),
            1e-12,
            "member",
        );
    }
    // The ensemble in the place of `self`: the method's entry points with `self` batched,
    // against each member's own method.
    let ct = Tensor::<f64>::rand_uniform(&[3], -1.0, 1.0, 90);
    let outs = Deep::predict_vmap_self(Batch(&ensemble), &x);
    let (_, (gm, gx)) = Deep::predict_vjp_vmap_self(Batch(&ensemble), &x, &ct);
    let tangent = ensemble.scale(0.5);
    let (_, slopes) = Deep::predict_jvp_vmap_self(Batch(&ensemble), &x, Batch(&tangent), &ct);
    // Every example and every member: the ensemble on a batch of inputs.
    let per_pair = Deep::predict_vmap_self(Batch(&ensemble), Batch(&xs.shrink(&[(0, 2), (0, 3)])));
    for (k, member) in members.iter().enumerate() {
        assert_close(
            &example(&outs, k),
            &member.predict(&x),
            1e-12,
            "self batched",
        );
        let (_, (g, dx)) = member.predict_vjp(&x, &ct);
        assert_close(
            &example(&gm.layers[1].w, k),
            &g.layers[1].w,
            1e-12,
            "self dw",
        );
        assert_close(&example(&gx, k), &dx, 1e-12, "self dx");
        let (_, slope) = member.predict_jvp(&x, &member.scale(0.5), &ct);
        assert_close(&example(&slopes, k), &slope, 1e-12, "self jvp");
        let xk = example(&xs, k);
        assert_close(&example(&per_pair, k), &member.predict(&xk), 1e-12, "pairs");
    }
}

/// Values chosen by branches on a constant, and computed in blocks: a branch may yield a shared
/// value where another yields a batched one.
#[differentiable(vmap)]
fn chosen(x: &Tensor<f64>, w: &Tensor<f64>, #[nodiff] mode: usize) -> Tensor<f64> {
    let h = if mode == 0 {
        x.tanh()
    } else if mode == 1 {
        let s = x * w;
        s.exp()
    } else {
        w.clone()
    };
    let scaled = {
        let t = &h * 2.0;
        t + w
    };
    if mode == 2 {
        scaled.square().sum()
    } else {
        (scaled * x).sum()
    }
}

#[test]
fn branches_and_blocks_yield_batched_values() {
    let xs = Tensor::<f64>::rand_uniform(&[4, 3], -1.0, 1.0, 90);
    let w = Tensor::<f64>::rand_uniform(&[3], -1.0, 1.0, 91);
    for mode in 0..3 {
        let values = chosen_vmap(Batch(&xs), &w, mode);
        let (gx, gw) = chosen_grad_vmap(Batch(&xs), &w, mode);
        assert_eq!(values.shape(), &[4]);
        for i in 0..4 {
            let x = example(&xs, i);
            assert_close(&example(&values, i), &chosen(&x, &w, mode), 1e-12, "value");
            let (ex, ew) = chosen_grad(&x, &w, mode);
            assert_close(&example(&gx, i), &ex, 1e-12, "dx");
            assert_close(&example(&gw, i), &ew, 1e-12, "dw");
        }
    }
    // By hand, mode 2: the value is Σ (2w + w)² = 9 Σ w², for every example.
    let expected = w.square().sum().item() * 9.0;
    for v in chosen_vmap(Batch(&xs), &w, 2).to_vec() {
        assert!((v - expected).abs() < 1e-12);
    }
}

/// Two results, the prediction and the squared error, batched together; the second is
/// shared by every example where `x` is batched and `w` is not.
#[differentiable(vmap)]
fn predict_and_error(
    w: &Tensor<f64>,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> (Tensor<f64>, Tensor<f64>) {
    let p = x.matmul(w).tanh();
    let e = (&p - y).square().sum() + w.square().sum();
    (p, e)
}

#[test]
fn a_tuple_of_results_batches() {
    let w = Tensor::<f64>::rand_uniform(&[3, 2], -1.0, 1.0, 100);
    let xs = Tensor::<f64>::rand_uniform(&[4, 3], -1.0, 1.0, 101);
    let ys = Tensor::<f64>::rand_uniform(&[4, 2], -1.0, 1.0, 102);
    let (ps, es) = predict_and_error_vmap(&w, Batch(&xs), Batch(&ys));
    assert_eq!((ps.shape(), es.shape()), (&[4, 2][..], &[4][..]));
    // Cotangents: batched for the prediction, one shared for the error.
    let cps = Tensor::<f64>::rand_uniform(&[4, 2], -1.0, 1.0, 103);
    let ce = Tensor::scalar(0.5);
    let (_, gw) = predict_and_error_vjp_vmap(&w, Batch(&xs), Batch(&ys), (Batch(&cps), &ce));
    let dw = Tensor::<f64>::rand_uniform(&[3, 2], -1.0, 1.0, 104);
    let (_, (dps, des)) = predict_and_error_jvp_vmap(&w, Batch(&xs), Batch(&ys), &dw);
    for i in 0..4 {
        let (x, y) = (example(&xs, i), example(&ys, i));
        let (p, e) = predict_and_error(&w, &x, &y);
        assert_close(&example(&ps, i), &p, 1e-12, "prediction");
        assert_close(&example(&es, i), &e, 1e-12, "error");
        let (_, g) = predict_and_error_vjp(&w, &x, &y, (&example(&cps, i), &ce));
        assert_close(&example(&gw, i), &g, 1e-12, "vjp");
        let (_, (dp, de)) = predict_and_error_jvp(&w, &x, &y, &dw);
        assert_close(&example(&dps, i), &dp, 1e-12, "jvp prediction");
        assert_close(&example(&des, i), &de, 1e-12, "jvp error");
        // The error's slope by central differences.
        let eps = 1e-6;
        let at = |d: f64| predict_and_error(&(&w + &(&dw * d)), &x, &y).1.item();
        let fd = (at(eps) - at(-eps)) / (2.0 * eps);
        assert!((example(&des, i).item() - fd).abs() < 1e-7);
    }
}

/// The mean error of a batch, through the batched function's tuple.
#[differentiable]
fn mean_error(
    w: &Tensor<f64>,
    #[nodiff] xs: &Tensor<f64>,
    #[nodiff] ys: &Tensor<f64>,
) -> Tensor<f64> {
    let (_, errors) = predict_and_error_vmap(w, Batch(xs), Batch(ys));
    errors.mean()
}

#[test]
fn a_gradient_through_a_batched_tuple() {
    let w = Tensor::<f64>::rand_uniform(&[3, 2], -1.0, 1.0, 110);
    let xs = Tensor::<f64>::rand_uniform(&[5, 3], -1.0, 1.0, 111);
    let ys = Tensor::<f64>::rand_uniform(&[5, 2], -1.0, 1.0, 112);
    let g = mean_error_grad(&w, &xs, &ys);
    let mut expected = Tensor::zeros(&[3, 2]);
    for i in 0..5 {
        let ones = (Tensor::zeros(&[2]), Tensor::scalar(0.2));
        let (_, gi) =
            predict_and_error_vjp(&w, &example(&xs, i), &example(&ys, i), (&ones.0, &ones.1));
        expected += gi;
    }
    assert_close(&g, &expected, 1e-12, "gradient");
}
