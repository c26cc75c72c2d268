// A pullback bound inside a differentiated function can only be called there.
use rune_ad::prelude::*;

#[differentiable]
fn field<T: Element>(x: &Tensor<T>, #[nodiff] a: &Tensor<T>) -> Tensor<T> {
    a.matmul(x).tanh() * x
}

fn apply<F: Fn(&Tensor<f64>) -> Tensor<f64>>(f: F, c: &Tensor<f64>) -> Tensor<f64> {
    f(c)
}

#[differentiable]
fn penalty(x: &Tensor<f64>, #[nodiff] a: &Tensor<f64>, #[nodiff] c: &Tensor<f64>) -> Tensor<f64> {
    let (_, pb) = field_pullback(x, a);
    apply(pb, c).square().sum()
}

fn main() {}
