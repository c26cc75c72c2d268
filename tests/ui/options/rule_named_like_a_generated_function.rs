use rune_ad::prelude::*;

fn norm_vjp(x: &Tensor<f64>, cotangent: &Tensor<f64>) -> Tensor<f64> {
    cotangent * x
}

fn norm_rule(x: &Tensor<f64>, tangent: &Tensor<f64>) -> Tensor<f64> {
    tangent * x
}

#[differentiable(custom_vjp = norm_vjp, custom_jvp = norm_rule)]
fn norm(x: &Tensor<f64>) -> Tensor<f64> {
    x.square() * 0.5
}

fn main() {}
