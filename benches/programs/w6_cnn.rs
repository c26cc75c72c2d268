//! W6 `cnn`: two 3×3 convolutions (padding 1) with ReLU and 2×2 max pooling, a linear layer and
//! softmax cross-entropy, on 32 images of 3×32×32 (f32).

use rune_ad::__private::workload_tensor;
use rune_ad::prelude::*;

use crate::harness::{NamedGrad, Program};

#[derive(Clone, Differentiable)]
pub struct Cnn {
    pub k1: Tensor<f32>,
    pub c1: Tensor<f32>,
    pub k2: Tensor<f32>,
    pub c2: Tensor<f32>,
    pub wf: Tensor<f32>,
    pub bf: Tensor<f32>,
}

/// `pool(relu(conv(x, K, c)))`: the op table's `conv2d` takes no bias, so `c` is added per
/// output channel.
#[differentiable]
pub fn conv_relu_pool(x: &Tensor<f32>, k: &Tensor<f32>, c: &Tensor<f32>) -> Tensor<f32> {
    let channels = c.shape()[0];
    (x.conv2d(k, 1, 1) + c.reshape(&[1, channels, 1, 1]))
        .relu()
        .max_pool2d(2, 2)
}

/// Mean softmax cross-entropy of the logits against `labels` (`[N, 1]`).
#[differentiable]
pub fn cnn_loss(
    model: &Cnn,
    #[nodiff] x: &Tensor<f32>,
    #[nodiff] labels: &Tensor<i64>,
) -> Tensor<f32> {
    let h = conv_relu_pool(x, &model.k1, &model.c1);
    let h = conv_relu_pool(&h, &model.k2, &model.c2);
    let n = h.shape()[0];
    let logits = h.reshape(&[n, h.len() / n]).matmul(&model.wf) + &model.bf;
    (logits.logsumexp_axes(&[1], false) - logits.gather(1, labels).squeeze(1)).mean()
}

pub struct W6 {
    pub model: Cnn,
    pub x: Tensor<f32>,
    pub labels: Tensor<i64>,
}

impl Default for W6 {
    fn default() -> Self {
        let labels = workload_tensor::<f64>(&[32], 602, 0.0, 10.0)
            .to_vec()
            .into_iter()
            .map(|v| v.floor() as i64)
            .collect();
        W6 {
            model: Cnn {
                k1: workload_tensor(&[16, 3, 3, 3], 603, -0.2, 0.2),
                c1: workload_tensor(&[16], 604, -0.1, 0.1),
                k2: workload_tensor(&[32, 16, 3, 3], 605, -0.08, 0.08),
                c2: workload_tensor(&[32], 606, -0.1, 0.1),
                wf: workload_tensor(&[32 * 8 * 8, 10], 607, -0.02, 0.02),
                bf: workload_tensor(&[10], 608, -0.1, 0.1),
            },
            x: workload_tensor(&[32, 3, 32, 32], 601, 0.0, 1.0),
            labels: Tensor::from_vec(labels, &[32, 1]),
        }
    }
}

impl Program for W6 {
    const ID: &'static str = "w6";
    const NAME: &'static str = "cnn";
    const DTYPE: &'static str = "f32";
    type Grads = Cnn;

    fn forward(&self) -> f64 {
        cnn_loss(&self.model, &self.x, &self.labels).item() as f64
    }

    fn value_and_grad(&self) -> (f64, Cnn) {
        let (v, g) = cnn_loss_value_and_grad(&self.model, &self.x, &self.labels);
        (v.item() as f64, g)
    }

    fn named(&self, g: &Cnn) -> Vec<NamedGrad> {
        vec![
            NamedGrad::new("K1", &g.k1),
            NamedGrad::new("c1", &g.c1),
            NamedGrad::new("K2", &g.k2),
            NamedGrad::new("c2", &g.c2),
            NamedGrad::new("Wf", &g.wf),
            NamedGrad::new("bf", &g.bf),
        ]
    }
}
