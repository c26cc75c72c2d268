use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Layer {
    w: Tensor<f64>,
}

impl Layer {
    #[differentiable]
    fn forward(&mut self, x: &Tensor<f64>) -> Tensor<f64> {
        x.matmul(&self.w)
    }
}

fn main() {}
