use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Layer {
    w: Tensor<f64>,
}

trait Module {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64>;
}

#[differentiable]
impl Module for Layer {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x.matmul(&self.w)
    }
}

fn main() {}
