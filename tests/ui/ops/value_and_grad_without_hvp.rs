// `value_and_grad` called inside a differentiated function, of a function without `_hvp`, says
// what makes it differentiable.
use rune_ad::prelude::*;

#[differentiable]
fn energy(x: &Tensor<f64>, #[nodiff] k: &Tensor<f64>) -> Tensor<f64> {
    (k * x.square()).sum()
}

#[differentiable]
fn penalised(x: &Tensor<f64>, #[nodiff] k: &Tensor<f64>) -> Tensor<f64> {
    let (e, g) = energy_value_and_grad(x, k);
    e + g.square().sum()
}

fn main() {}
