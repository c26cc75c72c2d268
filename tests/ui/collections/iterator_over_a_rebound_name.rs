use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Layers {
    layers: Vec<Tensor<f64>>,
    others: Vec<Tensor<f64>>,
}

#[differentiable]
fn f(p: &Layers) -> Tensor<f64> {
    let layers = &p.layers;
    let walk = layers.iter().rev();
    let layers = &p.others;
    let mut total = Tensor::scalar(0.0);
    for w in walk {
        total += w.sum();
    }
    total + layers[0].sum()
}

fn main() {}
