use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Layers {
    layers: Vec<Tensor<f64>>,
}

#[differentiable]
fn f(p: &Layers) -> Tensor<f64> {
    let mut total = Tensor::scalar(0.0);
    for w in p.layers.iter().peekable() {
        total = total + w.sum();
    }
    total
}

fn main() {}
