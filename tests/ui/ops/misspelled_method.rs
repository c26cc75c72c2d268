// A misspelled op and another library's name each get the supported spelling.
use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let a = x.sofmax(-1);
    let b = x.unsqueeze(0);
    a.sum() + b.sum()
}

fn main() {}
