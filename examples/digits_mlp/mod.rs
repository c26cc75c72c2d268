//! The multilayer perceptron of the `digits` and `digits_ddp` examples: hidden `nn::Linear`
//! layers followed by relu, then the output layer, and its loss, the mean softmax
//! cross-entropy `−mean(log_softmax(logits)[label])`, written as ordinary functions over
//! tensors; `#[differentiable]` on `loss` generates `loss_value_and_grad`.

use rune_ad::nn::Linear;
use rune_ad::prelude::*;

/// The network's parameters: hidden layers followed by relu, then the output layer.
#[derive(Clone, Differentiable)]
pub struct Mlp {
    pub hidden: Vec<Linear<f32>>,
    pub output: Linear<f32>,
}

/// The logits `[N, 10]` of a batch of images `x: [N, 64]`.
#[differentiable]
pub fn logits(model: &Mlp, #[nodiff] x: &Tensor<f32>) -> Tensor<f32> {
    let mut h = x.clone();
    for layer in &model.hidden {
        h = layer.forward(&h).relu();
    }
    model.output.forward(&h)
}

/// Mean softmax cross-entropy of the batch `x` against `labels: [N, 1]`.
#[differentiable]
pub fn loss(model: &Mlp, #[nodiff] x: &Tensor<f32>, #[nodiff] labels: &Tensor<i64>) -> Tensor<f32> {
    let log_p = logits(model, x).log_softmax(1);
    -log_p.gather(1, labels).mean()
}
