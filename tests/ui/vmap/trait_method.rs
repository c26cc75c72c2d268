use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Linear {
    w: Tensor<f64>,
}

trait Layer {
    #[differentiable]
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64>;
}

#[differentiable]
impl Layer for Linear {
    #[differentiable(vmap)]
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x.matmul(&self.w)
    }
}

fn main() {}
