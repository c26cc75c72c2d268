// A pullback called inside a differentiated function is a call of `g_vjp`, which is
// differentiated when `g` is generic over its element type: of a function on `f64`, the error
// is at the call and says so.
use rune_ad::prelude::*;

#[differentiable]
fn field(x: &Tensor<f64>, #[nodiff] a: &Tensor<f64>) -> Tensor<f64> {
    a.matmul(x).tanh() * x
}

#[differentiable]
fn penalty(x: &Tensor<f64>, #[nodiff] a: &Tensor<f64>, #[nodiff] c: &Tensor<f64>) -> Tensor<f64> {
    let (_, pb) = field_pullback(x, a);
    pb(c).square().sum()
}

fn main() {}
