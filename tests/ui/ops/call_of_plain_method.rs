use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Layer {
    w: Tensor<f64>,
}

impl Layer {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x.matmul(&self.w)
    }
}

#[differentiable]
fn f(layer: &Layer, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    layer.forward(x).sum()
}

fn main() {}
