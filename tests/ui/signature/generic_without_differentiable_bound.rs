use rune_ad::prelude::*;

trait Layer {
    #[differentiable]
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64>;
}

// `M` is not bounded by `Differentiable`, so `model` is not taken for a structure of
// parameters: the message says how to make it one.
#[differentiable]
fn loss<M: Layer>(model: &M, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    model.forward(x).sum()
}

fn main() {}
