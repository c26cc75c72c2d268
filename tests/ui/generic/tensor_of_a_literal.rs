use rune_ad::prelude::*;

#[differentiable]
fn f<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    (x + Tensor::scalar(1.0)).sum()
}

fn main() {}
