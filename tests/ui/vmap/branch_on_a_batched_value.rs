use rune_ad::prelude::*;

#[differentiable(vmap)]
fn f(x: &Tensor<f64>, #[nodiff] limit: f64) -> Tensor<f64> {
    let mut y = x.clone();
    while y.sum().item() < limit {
        y = &y * 2.0;
    }
    y
}

fn main() {}
