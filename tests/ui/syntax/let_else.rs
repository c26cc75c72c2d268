use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>, #[nodiff] k: Option<f64>) -> Tensor<f64> {
    let Some(k) = k else { panic!() };
    x * k
}

fn main() {}
