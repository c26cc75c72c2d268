//! Structure parameters: field access, indexing a `Vec` field by a constant, looping over a `Vec`
//! field, nested structures, and calls taking structures, in both modes, against finite
//! differences of the same functions written over plain tensors.

use rune_ad::optim::Adam;
use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Layer {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

#[derive(Clone, Differentiable)]
struct Mlp {
    layers: Vec<Layer>,
    #[nodiff]
    name: String,
}

#[derive(Clone, Differentiable)]
struct Nested {
    first: Layer,
    scale: Tensor<f64>,
}

#[differentiable]
fn layer_forward(layer: &Layer, x: &Tensor<f64>) -> Tensor<f64> {
    (x.matmul(&layer.w) + &layer.b).tanh()
}

#[differentiable]
fn mlp_loss(model: &Mlp, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
    let mut h = x.clone();
    for layer in &model.layers {
        h = layer_forward(layer, &h);
    }
    let d = h - y;
    (&d * &d).mean()
}

/// The same network on plain tensors (two layers), as the finite-difference reference.
fn plain_loss(params: &[Tensor<f64>], x: &Tensor<f64>, y: &Tensor<f64>) -> f64 {
    let h1 = (x.matmul(&params[0]) + &params[1]).tanh();
    let h2 = (h1.matmul(&params[2]) + &params[3]).tanh();
    let d = h2 - y;
    (&d * &d).mean().item()
}

fn model() -> Mlp {
    Mlp {
        layers: vec![
            Layer {
                w: Tensor::rand_uniform(&[3, 4], -0.5, 0.5, 1),
                b: Tensor::rand_uniform(&[4], -0.1, 0.1, 2),
            },
            Layer {
                w: Tensor::rand_uniform(&[4, 2], -0.5, 0.5, 3),
                b: Tensor::rand_uniform(&[2], -0.1, 0.1, 4),
            },
        ],
        name: "mlp".into(),
    }
}

/// Central differences of `plain_loss` along each leaf element.
fn fd_grad(params: &[Tensor<f64>], x: &Tensor<f64>, y: &Tensor<f64>) -> Vec<Vec<f64>> {
    let eps = 1e-6;
    params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (0..p.len())
                .map(|j| {
                    let shifted = |d: f64| {
                        let mut v = p.to_vec();
                        v[j] += d;
                        let mut ps = params.to_vec();
                        ps[i] = Tensor::from_vec(v, p.shape());
                        plain_loss(&ps, x, y)
                    };
                    (shifted(eps) - shifted(-eps)) / (2.0 * eps)
                })
                .collect()
        })
        .collect()
}

#[test]
fn an_mlp_whose_layers_are_a_vec() {
    let m = model();
    let x = Tensor::<f64>::rand_uniform(&[5, 3], -1.0, 1.0, 5);
    let y = Tensor::<f64>::rand_uniform(&[5, 2], -1.0, 1.0, 6);
    let (value, grad) = mlp_loss_value_and_grad(&m, &x, &y);
    let leaves: Vec<Tensor<f64>> = m.leaves().into_iter().cloned().collect();
    assert!((value.item() - plain_loss(&leaves, &x, &y)).abs() < 1e-14);
    assert_eq!(grad.name, "mlp");
    assert_eq!(
        grad.leaf_paths(""),
        vec!["layers[0].w", "layers[0].b", "layers[1].w", "layers[1].b"]
    );
    for (g, want) in grad.leaves().into_iter().zip(fd_grad(&leaves, &x, &y)) {
        for (a, b) in g.to_vec().iter().zip(&want) {
            assert!((a - b).abs() < 1e-8, "{a} vs {b}");
        }
    }
    // Forward mode along the parameters themselves agrees with ⟨grad, params⟩.
    let (_, t) = mlp_loss_jvp(&m, &x, &y, &m);
    let dot: f64 = grad
        .leaves()
        .into_iter()
        .zip(m.leaves())
        .map(|(g, p)| (g * p).sum().item())
        .sum();
    assert!((t.item() - dot).abs() < 1e-12);
}

#[differentiable]
fn first_layer_only(model: &Mlp, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let w = &model.layers[0].w;
    (x.matmul(w) + &model.layers[0].b).sum()
}

#[test]
fn a_constant_index_and_untouched_leaves() {
    let m = model();
    let x = Tensor::<f64>::ones(&[2, 3]);
    let g = first_layer_only_grad(&m, &x);
    // d/dw Σ x w = column sums of x (2 each); d/db = rows (2); the second layer gets zeros.
    assert_eq!(g.layers[0].w.to_vec(), vec![2.0; 12]);
    assert_eq!(g.layers[0].b.to_vec(), vec![2.0; 4]);
    assert_eq!(g.layers[1].w.to_vec(), vec![0.0; 8]);
    assert_eq!(g.layers[1].b.shape(), &[2]);
    assert!(first_layer_only(&m, &x).item().is_finite());
}

#[differentiable]
fn nested_loss(p: &Nested, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let h = layer_forward(&p.first, x);
    (h * &p.scale).sum()
}

#[test]
fn nested_structures() {
    let p = Nested {
        first: Layer {
            w: Tensor::rand_uniform(&[3, 2], -0.5, 0.5, 7),
            b: Tensor::rand_uniform(&[2], -0.1, 0.1, 8),
        },
        scale: Tensor::from_vec(vec![2.0, -1.0], &[2]),
    };
    let x = Tensor::<f64>::rand_uniform(&[4, 3], -1.0, 1.0, 9);
    let g = nested_loss_grad(&p, &x);
    // d/dscale = column sums of tanh(x w + b).
    let h = (x.matmul(&p.first.w) + &p.first.b).tanh();
    let want = h.sum_axes(&[0], false);
    for (a, b) in g.scale.to_vec().iter().zip(want.to_vec()) {
        assert!((a - b).abs() < 1e-12);
    }
    // d/db = Σ_rows scale · (1 - h²).
    let want_b = ((1.0 - &h * &h) * &p.scale).sum_axes(&[0], false);
    for (a, b) in g.first.b.to_vec().iter().zip(want_b.to_vec()) {
        assert!((a - b).abs() < 1e-12);
    }
    assert!(nested_loss(&p, &x).item().is_finite());
}

#[differentiable]
fn regression(model: &Layer, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
    let d = x.matmul(&model.w) + &model.b - y;
    (&d * &d).mean()
}

#[test]
fn adam_fits_a_linear_model() {
    // y = x w* + b* exactly, so the minimum loss is 0.
    let x = Tensor::<f64>::rand_uniform(&[32, 3], -1.0, 1.0, 10);
    let w_star = Tensor::from_vec(vec![1.5, -2.0, 0.5], &[3, 1]);
    let y = x.matmul(&w_star) + 0.25;
    let mut model = Layer {
        w: Tensor::zeros(&[3, 1]),
        b: Tensor::zeros(&[1]),
    };
    let mut adam = Adam::new(0.05);
    for _ in 0..1000 {
        let g = regression_grad(&model, &x, &y);
        adam.step(&mut model, &g);
    }
    assert!(regression(&model, &x, &y).item() < 1e-10);
    assert!((model.b.item() - 0.25).abs() < 1e-4);
}
