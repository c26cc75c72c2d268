use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Layer {
    w: Tensor<f64>,
}

#[differentiable]
fn f(layer: &Layer, x: &Tensor<f64>) -> Tensor<f64> {
    let mut l = layer.clone();
    l.w = x.exp();
    x.matmul(&l.w)
}

fn main() {}
