// `vmap` on a trait impl's method needs the trait's declaration under `vmap` too, which
// declares the batched twin each impl writes: without it the twin is not a member of the trait.
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
