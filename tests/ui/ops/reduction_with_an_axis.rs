// PyTorch's `x.sum(-1)` and `x.logsumexp(1)`: the reductions over chosen axes are other ops.
use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    x.sum(-1) + x.logsumexp(1)
}

fn main() {}
