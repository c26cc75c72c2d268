use rune_ad::prelude::*;

#[differentiable(dyn)]
pub trait Head<T: Element> {
    fn logits(&self, x: &Tensor<T>) -> Tensor<T>;
}

fn main() {}
