use rune_ad::prelude::*;

fn rule(_x: &Tensor<f64>, cotangent: &Tensor<f64>) -> Tensor<f64> {
    cotangent.clone()
}

#[differentiable(custom_vjp = rule)]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    x.exp()
}

fn main() {}
