use rune_ad::prelude::*;

#[differentiable(hvp)]
fn f<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    x.exp().sum()
}

fn main() {}
