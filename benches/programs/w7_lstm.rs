//! W7 `lstm`: an LSTM with fused gates (i, f, g, o side by side, as `nn.LSTM`), T 50, B 32,
//! input 64, hidden 128, and a linear read-out of the last state (f32).

use rune_ad::__private::workload_tensor;
use rune_ad::prelude::*;

use crate::harness::{NamedGrad, Program};

#[derive(Clone, Differentiable)]
pub struct Lstm {
    pub wx: Tensor<f32>,
    pub wh: Tensor<f32>,
    pub b: Tensor<f32>,
    pub wy: Tensor<f32>,
    pub by: Tensor<f32>,
}

/// `mean((h_T Wy + by - Y)^2)` after running the cell over the 50 steps of `xs`.
#[differentiable]
pub fn lstm_loss(
    cell: &Lstm,
    #[nodiff] xs: &Tensor<f32>,
    #[nodiff] y: &Tensor<f32>,
) -> Tensor<f32> {
    let (steps, batch, inputs) = (xs.shape()[0], xs.shape()[1], xs.shape()[2]);
    let hidden = cell.wh.shape()[0];
    let mut h = Tensor::<f32>::zeros(&[batch, hidden]);
    let mut c = Tensor::<f32>::zeros(&[batch, hidden]);
    for t in 0..steps {
        let x_t = xs.shrink(&[(t, t + 1), (0, batch), (0, inputs)]).squeeze(0);
        let z = x_t.matmul(&cell.wx) + h.matmul(&cell.wh) + &cell.b;
        let i = z.shrink(&[(0, batch), (0, hidden)]).sigmoid();
        let f = z.shrink(&[(0, batch), (hidden, 2 * hidden)]).sigmoid();
        let g = z.shrink(&[(0, batch), (2 * hidden, 3 * hidden)]).tanh();
        let o = z.shrink(&[(0, batch), (3 * hidden, 4 * hidden)]).sigmoid();
        c = f * &c + i * g;
        h = o * c.tanh();
    }
    (h.matmul(&cell.wy) + &cell.by - y).square().mean()
}

pub struct W7 {
    pub cell: Lstm,
    pub xs: Tensor<f32>,
    pub y: Tensor<f32>,
}

impl Default for W7 {
    fn default() -> Self {
        W7 {
            cell: Lstm {
                wx: workload_tensor(&[64, 512], 702, -0.09, 0.09),
                wh: workload_tensor(&[128, 512], 703, -0.09, 0.09),
                b: workload_tensor(&[512], 704, -0.1, 0.1),
                wy: workload_tensor(&[128, 16], 705, -0.09, 0.09),
                by: workload_tensor(&[16], 706, -0.1, 0.1),
            },
            xs: workload_tensor(&[50, 32, 64], 701, -1.0, 1.0),
            y: workload_tensor(&[32, 16], 707, -1.0, 1.0),
        }
    }
}

impl Program for W7 {
    const ID: &'static str = "w7";
    const NAME: &'static str = "lstm";
    const DTYPE: &'static str = "f32";
    type Grads = Lstm;

    fn forward(&self) -> f64 {
        lstm_loss(&self.cell, &self.xs, &self.y).item() as f64
    }

    fn value_and_grad(&self) -> (f64, Lstm) {
        let (v, g) = lstm_loss_value_and_grad(&self.cell, &self.xs, &self.y);
        (v.item() as f64, g)
    }

    fn named(&self, g: &Lstm) -> Vec<NamedGrad> {
        vec![
            NamedGrad::new("Wx", &g.wx),
            NamedGrad::new("Wh", &g.wh),
            NamedGrad::new("b", &g.b),
            NamedGrad::new("Wy", &g.wy),
            NamedGrad::new("by", &g.by),
        ]
    }
}
