use rune_ad::prelude::*;

#[differentiable]
fn even(x: &Tensor<f64>, #[nodiff] n: usize) -> Tensor<f64> {
    if n == 0 {
        x.clone()
    } else {
        odd(&x.sin(), n - 1)
    }
}

#[differentiable]
fn odd(x: &Tensor<f64>, #[nodiff] n: usize) -> Tensor<f64> {
    if n == 0 {
        x.clone()
    } else {
        even(&x.cos(), n - 1)
    }
}

fn main() {}
