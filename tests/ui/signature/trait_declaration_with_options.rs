use rune_ad::prelude::*;

trait Layer {
    #[differentiable(checkpoint)]
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64>;
}

fn main() {}
