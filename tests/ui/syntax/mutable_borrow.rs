use rune_ad::prelude::*;

fn scale_in_place(t: &mut Tensor<f64>) {
    *t *= 2.0;
}

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let mut y = x.exp();
    scale_in_place(&mut y);
    y
}

fn main() {}
