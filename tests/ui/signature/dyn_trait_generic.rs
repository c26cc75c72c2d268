use rune_ad::prelude::*;

#[differentiable(dyn)]
pub trait Head<const N: usize> {
    fn logits(&self, x: &Tensor<f64>) -> Tensor<f64>;
}

fn main() {}
