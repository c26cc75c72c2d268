use rune_ad::prelude::*;

macro_rules! doubled {
    ($e:expr) => {
        $e * 2.0
    };
}

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let y = doubled!(x);
    y.sum()
}

fn main() {}
