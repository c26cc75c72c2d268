use rune_ad::prelude::*;

#[differentiable]
pub fn generic<T: Element>(x: &Tensor<T>, #[nodiff] scale: T) -> Tensor<T> {
    (x * scale).tanh().sum()
}

#[differentiable]
fn concrete(x: Tensor<f32>, #[nodiff] n: usize) -> Tensor<f32> {
    let k = n as f32;
    (&x * k).exp().mean()
}

fn main() {
    let x = Tensor::<f64>::ones(&[3]);
    let _ = generic_grad(&x, 2.0);
    let y = Tensor::<f32>::ones(&[2]);
    let _ = concrete_value_and_grad(y, 2);
}
