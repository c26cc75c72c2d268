use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let maybe = Some(x.exp());
    match maybe {
        Some(y) => y.sum(),
        None => x.sum(),
    }
}

fn main() {}
