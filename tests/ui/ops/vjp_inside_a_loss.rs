// A `_vjp` inside another differentiated function, of a function with two differentiated
// parameters, says what it takes.
use rune_ad::prelude::*;

#[differentiable]
fn critic<T: Element>(w: &Tensor<T>, x: &Tensor<T>) -> Tensor<T> {
    x.matmul(w).tanh()
}

#[differentiable]
fn penalty(w: &Tensor<f64>, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let ones = Tensor::ones(&[2, 2]);
    let (value, _) = critic_vjp(w, x, &ones);
    value.square().sum()
}

fn main() {}
