//! `vmap` through a trait: `#[differentiable(vmap)]` on a method the trait declares gives the
//! trait the batched twin and the batched entry points, each impl under `#[differentiable]`
//! writes its twin, and a batched function generic over the trait (`m: &M`, `M: Layer`) calls
//! the twin of whichever impl it is given. Each batched result against the function called on
//! each example, and per-example gradients against central differences.

use rune_ad::prelude::*;

#[differentiable]
pub trait Layer {
    #[differentiable(vmap)]
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64>;
}

#[derive(Clone, Differentiable)]
pub struct Dense {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

#[differentiable]
impl Layer for Dense {
    #[differentiable(vmap)]
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        (x.matmul(&self.w) + &self.b).tanh()
    }
}

/// A second impl, elementwise.
#[derive(Clone, Differentiable)]
pub struct Scale {
    s: Tensor<f64>,
}

#[differentiable]
impl Layer for Scale {
    #[differentiable(vmap)]
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x * &self.s + x.square() * 0.1
    }
}

/// A loss generic over the layer.
#[differentiable(vmap)]
fn loss<M: Layer + Differentiable<Elem = f64>>(
    m: &M,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    (m.forward(x) - y).square().sum()
}

fn example(t: &Tensor<f64>, i: usize) -> Tensor<f64> {
    t.index_select(0, &[i]).squeeze(0)
}

#[track_caller]
fn assert_close(got: &Tensor<f64>, want: &Tensor<f64>, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}");
    for (a, b) in got.to_vec().iter().zip(want.to_vec()) {
        assert!(
            (a - b).abs() <= 1e-12 * b.abs().max(1.0),
            "{what}: {a} against {b}"
        );
    }
}

fn dense(seed: u64) -> Dense {
    Dense {
        w: Tensor::rand_uniform(&[3, 2], -0.8, 0.8, seed),
        b: Tensor::rand_uniform(&[2], -0.5, 0.5, seed + 1),
    }
}

#[test]
fn a_trait_method_batches_in_each_impl() {
    let d = dense(1);
    let sc = Scale {
        s: Tensor::rand_uniform(&[3], 0.5, 1.5, 3),
    };
    let xs = Tensor::<f64>::rand_uniform(&[4, 3], -1.0, 1.0, 4);
    let outs = d.forward_vmap(Batch(&xs));
    let scaled = sc.forward_vmap(Batch(&xs));
    let ct = Tensor::<f64>::rand_uniform(&[4, 2], -1.0, 1.0, 5);
    let (_, (gd, gx)) = d.forward_vjp_vmap(Batch(&xs), Batch(&ct));
    for i in 0..4 {
        let x = example(&xs, i);
        assert_close(&example(&outs, i), &d.forward(&x), "dense");
        assert_close(&example(&scaled, i), &sc.forward(&x), "scale");
        let (_, (g, dx)) = d.forward_vjp(&x, &example(&ct, i));
        assert_close(&example(&gd.w, i), &g.w, "dense dw");
        assert_close(&example(&gd.b, i), &g.b, "dense db");
        assert_close(&example(&gx, i), &dx, "dense dx");
    }
}

#[test]
fn per_example_gradients_of_a_loss_generic_over_the_layer() {
    let d = dense(10);
    let sc = Scale {
        s: Tensor::rand_uniform(&[3], 0.5, 1.5, 11),
    };
    let xs = Tensor::<f64>::rand_uniform(&[5, 3], -1.0, 1.0, 12);
    let ys = Tensor::<f64>::rand_uniform(&[5, 2], -1.0, 1.0, 13);
    let ys3 = Tensor::<f64>::rand_uniform(&[5, 3], -1.0, 1.0, 14);
    let grads = loss_grad_vmap(&d, Batch(&xs), Batch(&ys));
    let (values, scale_grads) = loss_value_and_grad_vmap(&sc, Batch(&xs), Batch(&ys3));
    assert_eq!(grads.w.shape(), &[5, 3, 2]);
    for i in 0..5 {
        let (x, y, y3) = (example(&xs, i), example(&ys, i), example(&ys3, i));
        let g = loss_grad(&d, &x, &y);
        assert_close(&example(&grads.w, i), &g.w, "w");
        assert_close(&example(&grads.b, i), &g.b, "b");
        assert_close(&example(&values, i), &loss(&sc, &x, &y3), "scale value");
        let gs = loss_grad(&sc, &x, &y3);
        assert_close(&example(&scale_grads.s, i), &gs.s, "s");
        // Central differences of one weight.
        let eps = 1e-6;
        let moved = |delta: f64| {
            let mut m = d.clone();
            let mut w = m.w.to_vec();
            w[3] += delta;
            m.w = Tensor::from_vec(w, &[3, 2]);
            loss(&m, &x, &y).item()
        };
        let fd = (moved(eps) - moved(-eps)) / (2.0 * eps);
        let got = example(&grads.w, i).to_vec()[3];
        assert!((got - fd).abs() < 1e-7, "{got} against {fd}");
    }
    // An ensemble of two dense layers, leaves stacked, on one example.
    let members = [dense(20), dense(30)];
    let ensemble = Dense {
        w: stack(&[&members[0].w, &members[1].w], 0),
        b: stack(&[&members[0].b, &members[1].b], 0),
    };
    let (x, y) = (example(&xs, 0), example(&ys, 0));
    let losses = loss_vmap(Batch(&ensemble), &x, &y);
    for (k, member) in members.iter().enumerate() {
        assert_close(&example(&losses, k), &loss(member, &x, &y), "member");
    }
}

/// A model of two different layers, each called through the trait inside a batched function.
#[derive(Clone, Differentiable)]
pub struct Stacked {
    dense: Dense,
    scale: Scale,
}

#[differentiable(vmap)]
fn stacked_loss(m: &Stacked, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
    let h = m.dense.forward(x);
    (m.scale.forward(&h) - y).square().sum()
}

#[test]
fn a_model_of_two_impls_batches_through_both() {
    let m = Stacked {
        dense: dense(40),
        scale: Scale {
            s: Tensor::rand_uniform(&[2], 0.5, 1.5, 41),
        },
    };
    let xs = Tensor::<f64>::rand_uniform(&[3, 3], -1.0, 1.0, 42);
    let ys = Tensor::<f64>::rand_uniform(&[3, 2], -1.0, 1.0, 43);
    let grads = stacked_loss_grad_vmap(&m, Batch(&xs), Batch(&ys));
    for i in 0..3 {
        let g = stacked_loss_grad(&m, &example(&xs, i), &example(&ys, i));
        assert_close(&example(&grads.dense.w, i), &g.dense.w, "dense w");
        assert_close(&example(&grads.scale.s, i), &g.scale.s, "scale s");
    }
}

/// A trait with a provided (default-bodied) method under `vmap`: impls that keep it batch the
/// trait's body, an impl that overrides it (under `vmap` too) batches its own.
#[differentiable]
pub trait Block {
    #[differentiable(vmap)]
    fn mix(&self, x: &Tensor<f64>) -> Tensor<f64>;

    /// Two applications with a residual connection.
    #[differentiable(vmap)]
    fn residual(&self, x: &Tensor<f64>) -> Tensor<f64> {
        let h = self.mix(x);
        self.mix(&h) * 0.5 + x
    }
}

#[derive(Clone, Differentiable)]
pub struct Square {
    w: Tensor<f64>,
}

#[differentiable]
impl Block for Square {
    #[differentiable(vmap)]
    fn mix(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x.matmul(&self.w).sin()
    }
}

#[derive(Clone, Differentiable)]
pub struct Gate {
    g: Tensor<f64>,
}

#[differentiable]
impl Block for Gate {
    #[differentiable(vmap)]
    fn mix(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x * self.g.sigmoid()
    }

    #[differentiable(vmap)]
    fn residual(&self, x: &Tensor<f64>) -> Tensor<f64> {
        self.mix(x).tanh() - x * 0.25
    }
}

#[differentiable(vmap)]
fn block_loss<B: Block + Differentiable<Elem = f64>>(
    b: &B,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    (b.residual(x) - y).square().sum()
}

#[test]
fn a_provided_method_batches_the_traits_body_or_the_impls_override() {
    let sq = Square {
        w: Tensor::rand_uniform(&[3, 3], -0.9, 0.9, 50),
    };
    let gate = Gate {
        g: Tensor::rand_uniform(&[3], -1.0, 1.0, 51),
    };
    let xs = Tensor::<f64>::rand_uniform(&[4, 3], -1.0, 1.0, 52);
    let ys = Tensor::<f64>::rand_uniform(&[4, 3], -1.0, 1.0, 53);
    let outs = sq.residual_vmap(Batch(&xs));
    let gated = gate.residual_vmap(Batch(&xs));
    let grads = block_loss_grad_vmap(&sq, Batch(&xs), Batch(&ys));
    let gate_grads = block_loss_grad_vmap(&gate, Batch(&xs), Batch(&ys));
    for i in 0..4 {
        let (x, y) = (example(&xs, i), example(&ys, i));
        // The trait's body, written out by hand for `Square`.
        let h = x.matmul(&sq.w).sin();
        let want = h.matmul(&sq.w).sin() * 0.5 + &x;
        assert_close(&example(&outs, i), &want, "the trait's body");
        // The override, by hand for `Gate`.
        let want = (&x * gate.g.sigmoid()).tanh() - &x * 0.25;
        assert_close(&example(&gated, i), &want, "the override");
        assert_close(
            &example(&grads.w, i),
            &block_loss_grad(&sq, &x, &y).w,
            "square w",
        );
        assert_close(
            &example(&gate_grads.g, i),
            &block_loss_grad(&gate, &x, &y).g,
            "gate g",
        );
        // Central differences of one weight of each.
        let eps = 1e-6;
        let fd = |f: &dyn Fn(f64) -> f64| (f(eps) - f(-eps)) / (2.0 * eps);
        let moved_sq = |delta: f64| {
            let mut w = sq.w.to_vec();
            w[4] += delta;
            let m = Square {
                w: Tensor::from_vec(w, &[3, 3]),
            };
            block_loss(&m, &x, &y).item()
        };
        let moved_gate = |delta: f64| {
            let mut g = gate.g.to_vec();
            g[1] += delta;
            let m = Gate {
                g: Tensor::from_vec(g, &[3]),
            };
            block_loss(&m, &x, &y).item()
        };
        let (got, want) = (example(&grads.w, i).to_vec()[4], fd(&moved_sq));
        assert!((got - want).abs() < 1e-7, "square: {got} against {want}");
        let (got, want) = (example(&gate_grads.g, i).to_vec()[1], fd(&moved_gate));
        assert!((got - want).abs() < 1e-7, "gate: {got} against {want}");
    }
}
