use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let mut outs = Vec::new();
    outs.push(x.exp());
    outs.push(x.sin());
    let last = outs.pop().unwrap();
    last.sum()
}

fn main() {}
