use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>, #[nodiff] shape: &[usize]) -> Tensor<f64> {
    let y = x.try_reshape(shape)?;
    y.exp()
}

fn main() {}
