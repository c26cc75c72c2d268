//! `nn::Sequential`: layers of several types in one list through `Box<dyn Module<T>>`, as
//! `torch.nn.Sequential` holds them. Its gradient in every variant (finite differences, the
//! dot-product test), against the same model written with concrete fields, in `f32` against
//! `f64`; the activations against their formulas; a user's own layer beside ours.

mod support;

use rune_ad::nn::{Activation, Init, LayerNorm, Linear, Module, Sequential};
use rune_ad::optim::AdamW;
use rune_ad::prelude::*;
use support::check_variants;

#[differentiable]
fn loss<T: Element>(
    model: &Sequential<T>,
    #[nodiff] x: &Tensor<T>,
    #[nodiff] y: &Tensor<T>,
) -> Tensor<T> {
    (model.forward(x) - y).square().mean()
}

/// A user's layer: `x · scale`, elementwise.
#[derive(Clone, Differentiable)]
pub struct Scale<T: Element> {
    s: Tensor<T>,
}

#[differentiable]
impl<T: Element> Module<T> for Scale<T> {
    fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        x * &self.s
    }
}

/// The same model with concrete fields, which does not go through the boxes.
#[derive(Clone, Differentiable)]
pub struct Plain {
    l1: Linear<f64>,
    norm: LayerNorm<f64>,
    inner: Linear<f64>,
    scale: Scale<f64>,
    l2: Linear<f64>,
}

#[differentiable]
fn plain_loss(m: &Plain, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
    let h = m.l1.forward(x).gelu();
    let h = m.norm.forward(&h);
    let h = m.scale.forward(&m.inner.forward(&h).tanh());
    (m.l2.forward(&h).silu() - y).square().mean()
}

fn plain(seed: u64) -> Plain {
    let mut init = Init::new(seed);
    let mut norm = LayerNorm::new(4);
    norm.weight = init.uniform(&[4], 1.5);
    norm.bias = init.uniform(&[4], 0.5);
    Plain {
        l1: Linear::new(3, 4, &mut init),
        norm,
        inner: Linear::new(4, 4, &mut init),
        scale: Scale {
            s: init.uniform(&[4], 2.0),
        },
        l2: Linear::new(4, 2, &mut init),
    }
}

/// `m` as a `Sequential`, with a nested `Sequential` in the middle.
fn sequential(m: &Plain) -> Sequential<f64> {
    Sequential::new()
        .push(m.l1.clone())
        .push(Activation::gelu())
        .push(m.norm.clone())
        .push(
            Sequential::new()
                .push(m.inner.clone())
                .push(Activation::tanh())
                .push(m.scale.clone()),
        )
        .push(m.l2.clone())
        .push(Activation::silu())
}

fn layer<L: Module<f64> + 'static>(s: &Sequential<f64>, k: usize) -> &L {
    s.layers[k].downcast_ref::<L>().expect("the layer's type")
}

#[track_caller]
fn assert_same(got: &Tensor<f64>, want: &Tensor<f64>) {
    for (a, b) in got.to_vec().iter().zip(want.to_vec()) {
        assert!((a - b).abs() <= 1e-14 * b.abs().max(1.0), "{a} against {b}");
    }
}

#[test]
fn a_sequential_model_has_every_variant_and_the_gradient_of_its_fields() {
    let p = plain(1);
    let m = sequential(&p);
    let mut init = Init::new(2);
    let x = init.uniform::<f64>(&[5, 3], 1.0);
    let y = init.uniform::<f64>(&[5, 2], 1.0);
    check_variants!(
        loss,
        loss_value_and_grad,
        loss_grad,
        loss_vjp,
        loss_jvp,
        loss_pullback;
        [m];
        (&m, &x, &y)
    );
    assert_same(&loss(&m, &x, &y), &plain_loss(&p, &x, &y));
    let g = loss_grad(&m, &x, &y);
    let want = plain_loss_grad(&p, &x, &y);
    assert_same(&layer::<Linear<f64>>(&g, 0).weight, &want.l1.weight);
    assert_same(&layer::<LayerNorm<f64>>(&g, 2).bias, &want.norm.bias);
    let inner = layer::<Sequential<f64>>(&g, 3);
    assert_same(&layer::<Linear<f64>>(inner, 0).weight, &want.inner.weight);
    assert_same(&layer::<Scale<f64>>(inner, 2).s, &want.scale.s);
    assert_same(&layer::<Linear<f64>>(&g, 4).bias, &want.l2.bias);
    assert_eq!(g.leaves().len(), 9);
    assert_eq!(
        m.leaf_paths("model")[6],
        "model.layers[3].layers[2].s",
        "{:?}",
        m.leaf_paths("model")
    );
}

#[test]
fn in_f32_the_gradient_is_f64_s_rounded() {
    let p = plain(3);
    let m = sequential(&p);
    let to32 = |t: &Tensor<f64>| {
        Tensor::<f32>::from_vec(t.to_vec().iter().map(|v| *v as f32).collect(), t.shape())
    };
    let l32 = |l: &Linear<f64>| Linear {
        weight: to32(&l.weight),
        bias: to32(&l.bias),
    };
    let mut norm = LayerNorm::<f32>::new(4);
    norm.weight = to32(&p.norm.weight);
    norm.bias = to32(&p.norm.bias);
    let m32 = Sequential::new()
        .push(l32(&p.l1))
        .push(Activation::gelu())
        .push(norm)
        .push(
            Sequential::new()
                .push(l32(&p.inner))
                .push(Activation::tanh())
                .push(Scale {
                    s: to32(&p.scale.s),
                }),
        )
        .push(l32(&p.l2))
        .push(Activation::silu());
    let mut init = Init::new(4);
    let x = init.uniform::<f64>(&[5, 3], 1.0);
    let y = init.uniform::<f64>(&[5, 2], 1.0);
    let g = loss_grad(&m, &x, &y);
    let g32 = loss_grad(&m32, &to32(&x), &to32(&y));
    let scale = g
        .leaves()
        .iter()
        .flat_map(|l| l.to_vec())
        .fold(0.0_f64, |a, v| a.max(v.abs()));
    for (a, b) in g32.leaves().iter().zip(g.leaves()) {
        for (a, b) in a.to_vec().iter().zip(b.to_vec()) {
            assert!((f64::from(*a) - b).abs() <= 1e-5 * scale, "{a} against {b}");
        }
    }
}

#[test]
fn each_activation_is_its_formula() {
    let x = Tensor::from_vec(vec![-2.0, -0.5, 0.0, 0.75, 3.0], &[5]);
    type Case = (Activation<f64>, fn(f64) -> f64);
    let cases: [Case; 4] = [
        (Activation::relu(), |v| v.max(0.0)),
        (Activation::tanh(), f64::tanh),
        (Activation::sigmoid(), |v| 1.0 / (1.0 + (-v).exp())),
        (Activation::silu(), |v| v / (1.0 + (-v).exp())),
    ];
    for (act, f) in cases {
        let got = act.forward(&x).to_vec();
        for (g, v) in got.iter().zip(x.to_vec()) {
            assert!((g - f(v)).abs() < 1e-15, "{act:?} at {v}: {g}");
        }
    }
    // x Φ(x), Φ from `erf`.
    let got = Activation::<f64>::gelu().forward(&x).to_vec();
    let phi = ((&x / std::f64::consts::SQRT_2).erf() + 1.0) * 0.5;
    for ((g, v), p) in got.iter().zip(x.to_vec()).zip(phi.to_vec()) {
        assert!((g - v * p).abs() < 1e-15, "gelu at {v}: {g}");
    }
}

#[test]
fn adamw_trains_a_sequential_model() {
    let mut init = Init::new(5);
    let mut m = Sequential::new()
        .push(Linear::<f64>::new(2, 16, &mut init))
        .push(Activation::tanh())
        .push(Linear::new(16, 1, &mut init));
    // y = x0 · x1 on a grid.
    let xs: Vec<f64> = (0..25)
        .flat_map(|i| [f64::from(i / 5) / 2.0 - 1.0, f64::from(i % 5) / 2.0 - 1.0])
        .collect();
    let ys: Vec<f64> = xs.chunks(2).map(|p| p[0] * p[1]).collect();
    let (x, y) = (
        Tensor::from_vec(xs, &[25, 2]),
        Tensor::from_vec(ys, &[25, 1]),
    );
    let first = loss(&m, &x, &y).item();
    let mut opt = AdamW::new(0.02);
    for _ in 0..300 {
        let g = loss_grad(&m, &x, &y);
        opt.step(&mut m, &g);
    }
    let last = loss(&m, &x, &y).item();
    assert!(last < first / 20.0, "{first} → {last}");
}
