use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Layer {
    w: Tensor<f64>,
}

// The trait's declaration of `forward` has no `#[differentiable]`, so the trait declares no
// entry points, and those the impl writes are not members of it (docs/porting.md, "Layers
// through a trait").
trait Module {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64>;
}

#[differentiable]
impl Module for Layer {
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x.matmul(&self.w)
    }
}

fn main() {}
