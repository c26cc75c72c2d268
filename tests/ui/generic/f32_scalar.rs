use rune_ad::prelude::*;

#[differentiable]
fn f<T: Element>(x: &Tensor<T>, #[nodiff] k: f32) -> Tensor<T> {
    (x * k).sum()
}

fn main() {}
