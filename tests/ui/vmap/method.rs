use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Linear {
    w: Tensor<f64>,
}

impl Linear {
    #[differentiable(vmap)]
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x.matmul(&self.w)
    }
}

fn main() {}
