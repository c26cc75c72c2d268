//! Iterator chains over differentiated sequences (`Vec` fields of structures, local `Vec`s),
//! written as Rust users write them: `for` over `iter().enumerate()`, `zip`, `rev`, and
//! `fold`, `map(..).sum()`, `collect()`.

use rune_ad::prelude::*;

fn t64(values: &[f64], shape: &[usize]) -> Tensor<f64> {
    Tensor::from_vec(values.to_vec(), shape)
}

#[derive(Clone, Differentiable)]
struct Layer {
    w: Tensor<f64>,
    b: Tensor<f64>,
}

#[derive(Clone, Differentiable)]
struct Stack {
    layers: Vec<Layer>,
    scales: Vec<Tensor<f64>>,
}

/// The same model written four ways.
#[differentiable]
fn by_fold(model: &Stack, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let h = model
        .layers
        .iter()
        .fold(x.clone(), |h, layer| (h.matmul(&layer.w) + &layer.b).tanh());
    h.sum()
}

#[differentiable]
fn by_for(model: &Stack, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let mut h = x.clone();
    for layer in model.layers.iter() {
        h = (h.matmul(&layer.w) + &layer.b).tanh();
    }
    h.sum()
}

#[differentiable]
fn by_enumerate_zip_rev(model: &Stack, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let mut h = x.clone();
    let n = model.layers.len();
    for (i, (layer, scale)) in model.layers.iter().zip(model.scales.iter()).enumerate() {
        h = (h.matmul(&layer.w) + &layer.b).tanh() * scale * ((i + 1) as f64);
    }
    let mut back = h.sum() * 0.0;
    for (k, s) in model.scales.iter().rev().enumerate() {
        // k counts from the last scale: s is scales[n - 1 - k].
        back += s.sum() * ((k * 10 + n) as f64);
    }
    h.sum() + back
}

#[differentiable]
fn by_map_sum(model: &Stack, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let penalty: Tensor<f64> = model.layers.iter().map(|l| l.w.square().sum()).sum();
    let outs: Vec<Tensor<f64>> = model.layers.iter().map(|l| x.matmul(&l.w).sum()).collect();
    penalty + stack(&outs, 0).sum() + (0..3).map(|i| x.sum() * (i as f64)).sum::<Tensor<f64>>()
}

fn model() -> Stack {
    Stack {
        layers: vec![
            Layer {
                w: Tensor::rand_normal(&[3, 3], 0.0, 0.5, 1),
                b: Tensor::rand_normal(&[3], 0.0, 0.5, 2),
            },
            Layer {
                w: Tensor::rand_normal(&[3, 3], 0.0, 0.5, 3),
                b: Tensor::rand_normal(&[3], 0.0, 0.5, 4),
            },
        ],
        scales: vec![
            Tensor::rand_normal(&[3], 1.0, 0.2, 5),
            Tensor::rand_normal(&[3], 1.0, 0.2, 6),
        ],
    }
}

/// Central differences of `f` along every leaf of `m`, against the gradient.
#[track_caller]
fn check(f: impl Fn(&Stack) -> f64, m: &Stack, grad: &Stack) {
    let eps = 1e-6;
    let mut m = m.clone();
    let paths = m.leaf_paths("");
    for (leaf, path) in paths.iter().enumerate() {
        let len = m.leaves()[leaf].len();
        for i in 0..len {
            let base = m.leaves()[leaf].to_vec();
            let mut up = base.clone();
            up[i] += eps;
            *m.leaves_mut()[leaf] = Tensor::from_vec(up, m.leaves()[leaf].shape());
            let fu = f(&m);
            let mut down = base.clone();
            down[i] -= eps;
            *m.leaves_mut()[leaf] = Tensor::from_vec(down, m.leaves()[leaf].shape());
            let fd = (fu - f(&m)) / (2.0 * eps);
            let shape = m.leaves()[leaf].shape().to_vec();
            *m.leaves_mut()[leaf] = Tensor::from_vec(base, &shape);
            let g = grad.leaves()[leaf].to_vec()[i];
            assert!(
                (g - fd).abs() <= 1e-6 * fd.abs().max(1.0),
                "{path}[{i}]: gradient {g}, finite difference {fd}"
            );
        }
    }
}

#[test]
fn fold_and_for_agree_with_finite_differences() {
    let m = model();
    let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 7);
    let (v1, g1) = by_fold_value_and_grad(&m, &x);
    let (v2, g2) = by_for_value_and_grad(&m, &x);
    assert_eq!(v1.item(), by_fold(&m, &x).item());
    assert_eq!(v1.item(), v2.item());
    check(|m| by_fold(m, &x).item(), &m, &g1);
    for (a, b) in g1.leaves().iter().zip(g2.leaves()) {
        assert_eq!(a.to_vec(), b.to_vec());
    }
    // Forward mode along the first layer's weights equals ⟨gradient, tangent⟩.
    let mut tangent = m.zeros_like();
    tangent.layers[0].w = Tensor::ones(&[3, 3]);
    let (v, t) = by_fold_jvp(&m, &x, &tangent);
    assert_eq!(v.item(), v1.item());
    let want: f64 = g1.layers[0].w.to_vec().iter().sum();
    assert!((t.item() - want).abs() < 1e-12);
}

#[test]
fn enumerate_zip_and_rev() {
    let m = model();
    let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 8);
    let (v, g) = by_enumerate_zip_rev_value_and_grad(&m, &x);
    assert_eq!(v.item(), by_enumerate_zip_rev(&m, &x).item());
    check(|m| by_enumerate_zip_rev(m, &x).item(), &m, &g);
    // The reversed, enumerated loop weighs scales[1] by 0 * 10 + 2 and scales[0] by 12.
    let mut only_scales = m.clone();
    only_scales.layers[0].w = Tensor::zeros(&[3, 3]);
    only_scales.layers[0].b = Tensor::zeros(&[3]);
    let (_, g) = by_enumerate_zip_rev_value_and_grad(&only_scales, &x);
    // h = 0 after the first layer, so h's terms carry no gradient to scales[0]: its gradient is 12.
    assert_eq!(g.scales[0].to_vec(), vec![12.0; 3]);
}

#[test]
fn map_sum_and_collect() {
    let m = model();
    let x = t64(&[0.5, -1.0, 2.0, 0.1, 0.2, 0.3], &[2, 3]);
    let (v, g) = by_map_sum_value_and_grad(&m, &x);
    assert_eq!(v.item(), by_map_sum(&m, &x).item());
    check(|m| by_map_sum(m, &x).item(), &m, &g);
    let (v2, t) = by_map_sum_jvp(&m, &x, &m);
    assert_eq!(v2.item(), v.item());
    let want: f64 = g
        .leaves()
        .iter()
        .zip(m.leaves())
        .map(|(g, t)| {
            g.to_vec()
                .iter()
                .zip(t.to_vec())
                .map(|(a, b)| a * b)
                .sum::<f64>()
        })
        .sum();
    assert!((t.item() - want).abs() < 1e-10);
}
