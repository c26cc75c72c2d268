//! W5 `transformer`: two pre-LayerNorm GPT-2 blocks, B 8, T 64, D 128, 4 heads, MLP 512 (f32).
//!
//! Written as a user ports a PyTorch module: a `Block` structure of parameters with a
//! `#[differentiable]` forward method, the blocks in a `Vec` of the model, LayerNorm and GELU as
//! small differentiable functions (the op table has neither: docs/PROGRAMS.md's formulas, composed).

use rune_ad::__private::workload_tensor;
use rune_ad::prelude::*;

use crate::harness::{NamedGrad, Program};

const B: usize = 8;
const T: usize = 64;
const D: usize = 128;
const HEADS: usize = 4;
const DH: usize = D / HEADS;
const F: usize = 512;
const LAYERS: usize = 2;

/// The parameters of one block, in the order of docs/PROGRAMS.md's table (seed offsets 0–11).
#[derive(Clone, Differentiable)]
pub struct Block {
    pub ln1_g: Tensor<f32>,
    pub ln1_b: Tensor<f32>,
    pub wqkv: Tensor<f32>,
    pub bqkv: Tensor<f32>,
    pub wo: Tensor<f32>,
    pub bo: Tensor<f32>,
    pub ln2_g: Tensor<f32>,
    pub ln2_b: Tensor<f32>,
    pub w1: Tensor<f32>,
    pub b1: Tensor<f32>,
    pub w2: Tensor<f32>,
    pub b2: Tensor<f32>,
}

#[derive(Clone, Differentiable)]
pub struct Transformer {
    pub blocks: Vec<Block>,
}

/// Names of the block's tensors in the scripts' `grads` field (`Wqkv.0`, …).
const NAMES: [&str; 12] = [
    "ln1_g", "ln1_b", "Wqkv", "bqkv", "Wo", "bo", "ln2_g", "ln2_b", "W1", "b1", "W2", "b2",
];

/// LayerNorm over the last axis, biased variance, ε = 1e-5.
#[differentiable]
pub fn layer_norm(x: &Tensor<f32>, g: &Tensor<f32>, b: &Tensor<f32>) -> Tensor<f32> {
    let xc = x - x.mean_axes(&[-1], true);
    let var = xc.square().mean_axes(&[-1], true);
    xc / (var + 1e-5).sqrt() * g + b
}

/// GELU, tanh approximation.
#[differentiable]
pub fn gelu(x: &Tensor<f32>) -> Tensor<f32> {
    let c = (2.0 / std::f32::consts::PI).sqrt();
    x * 0.5 * (((x + x.powi(3) * 0.044715) * c).tanh() + 1.0)
}

/// `[B, T, D] -> [B, H, T, DH]`: head j is columns `DH·j .. DH·j + DH - 1`.
#[differentiable]
pub fn heads(t: &Tensor<f32>) -> Tensor<f32> {
    t.reshape(&[B, T, HEADS, DH]).permute(&[0, 2, 1, 3])
}

#[differentiable]
impl Block {
    pub fn forward(&self, h: &Tensor<f32>, #[nodiff] causal: &Tensor<bool>) -> Tensor<f32> {
        let a = layer_norm(h, &self.ln1_g, &self.ln1_b);
        let qkv = a.matmul(&self.wqkv) + &self.bqkv;
        let q = heads(&qkv.shrink(&[(0, B), (0, T), (0, D)]));
        let k = heads(&qkv.shrink(&[(0, B), (0, T), (D, 2 * D)]));
        let v = heads(&qkv.shrink(&[(0, B), (0, T), (2 * D, 3 * D)]));
        let s = q.matmul(&k.t()) * (1.0 / (DH as f32).sqrt());
        let p = where_cond(causal, &s, &-1e9).softmax(-1);
        let o = p.matmul(&v).permute(&[0, 2, 1, 3]).reshape(&[B, T, D]);
        let h = h + o.matmul(&self.wo) + &self.bo;
        let a = layer_norm(&h, &self.ln2_g, &self.ln2_b);
        let m = gelu(&(a.matmul(&self.w1) + &self.b1));
        h + m.matmul(&self.w2) + &self.b2
    }
}

/// `mean((blocks(X) - Y)^2)`.
#[differentiable]
pub fn transformer_loss(
    model: &Transformer,
    #[nodiff] x: &Tensor<f32>,
    #[nodiff] y: &Tensor<f32>,
    #[nodiff] causal: &Tensor<bool>,
) -> Tensor<f32> {
    let mut h = x.clone();
    for block in &model.blocks {
        h = block.forward(&h, causal);
    }
    (h - y).square().mean()
}

pub struct W5 {
    pub model: Transformer,
    pub x: Tensor<f32>,
    pub y: Tensor<f32>,
    pub causal: Tensor<bool>,
}

impl Default for W5 {
    fn default() -> Self {
        let blocks = (0..LAYERS as u64)
            .map(|l| {
                let p = |k: u64, shape: &[usize], lo: f64, hi: f64| {
                    workload_tensor(shape, 510 + 20 * l + k, lo, hi)
                };
                Block {
                    ln1_g: p(0, &[D], 0.9, 1.1),
                    ln1_b: p(1, &[D], -0.1, 0.1),
                    wqkv: p(2, &[D, 3 * D], -0.09, 0.09),
                    bqkv: p(3, &[3 * D], -0.02, 0.02),
                    wo: p(4, &[D, D], -0.09, 0.09),
                    bo: p(5, &[D], -0.02, 0.02),
                    ln2_g: p(6, &[D], 0.9, 1.1),
                    ln2_b: p(7, &[D], -0.1, 0.1),
                    w1: p(8, &[D, F], -0.09, 0.09),
                    b1: p(9, &[F], -0.02, 0.02),
                    w2: p(10, &[F, D], -0.045, 0.045),
                    b2: p(11, &[D], -0.02, 0.02),
                }
            })
            .collect();
        let causal = (0..T * T).map(|e| e % T <= e / T).collect();
        W5 {
            model: Transformer { blocks },
            x: workload_tensor(&[B, T, D], 501, -1.0, 1.0),
            y: workload_tensor(&[B, T, D], 502, -1.0, 1.0),
            causal: Tensor::from_vec(causal, &[T, T]),
        }
    }
}

impl Program for W5 {
    const ID: &'static str = "w5";
    const NAME: &'static str = "transformer";
    const DTYPE: &'static str = "f32";
    type Grads = Transformer;

    fn forward(&self) -> f64 {
        transformer_loss(&self.model, &self.x, &self.y, &self.causal).item() as f64
    }

    fn value_and_grad(&self) -> (f64, Transformer) {
        let (v, g) = transformer_loss_value_and_grad(&self.model, &self.x, &self.y, &self.causal);
        (v.item() as f64, g)
    }

    fn named(&self, g: &Transformer) -> Vec<NamedGrad> {
        g.blocks
            .iter()
            .enumerate()
            .flat_map(|(l, b)| {
                let tensors = [
                    &b.ln1_g, &b.ln1_b, &b.wqkv, &b.bqkv, &b.wo, &b.bo, &b.ln2_g, &b.ln2_b, &b.w1,
                    &b.b1, &b.w2, &b.b2,
                ];
                NAMES
                    .iter()
                    .zip(tensors)
                    .map(move |(n, t)| NamedGrad::new(format!("{n}.{l}"), t))
            })
            .collect()
    }
}
