//! Multi-head attention, in `torch.nn.MultiheadAttention`'s layout (`batch_first`).

use super::{Init, Linear};
use crate::{differentiable, stop_gradient, Differentiable, Element, Tensor};

/// `torch.nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)` as self-attention on
/// `[N, L, E]`: `in_proj_weight` `[3E, E]` (queries, keys, values stacked), `in_proj_bias`
/// `[3E]`, and `out_proj` (a [`Linear`] `E → E`). At first the projection is Xavier-uniform
/// and its bias zero, `out_proj`'s bias zero, as PyTorch's.
///
/// A mask is `true` where attention is not allowed and broadcasts against the scores
/// `[N, heads, L, L]`: [`causal_mask`](Self::causal_mask) (`[L, L]`, each position sees itself
/// and the ones before), [`padding_mask`](Self::padding_mask) (`[N, 1, 1, L]` from `[N, L]`
/// flags of padded positions), or both joined with `.or(..)`.
#[derive(Clone, Debug, Differentiable)]
pub struct MultiHeadAttention<T: Element> {
    /// `[3·embed, embed]`.
    pub in_proj_weight: Tensor<T>,
    /// `[3·embed]`.
    pub in_proj_bias: Tensor<T>,
    /// The output projection.
    pub out_proj: Linear<T>,
    /// The number of heads, which divides the embedding width.
    #[nodiff]
    pub heads: usize,
}

impl<T: Element> MultiHeadAttention<T> {
    /// Attention over `embed` features in `heads` heads, initialised as PyTorch's.
    ///
    /// # Panics
    /// When `heads` is zero or does not divide `embed`.
    #[track_caller]
    pub fn new(embed: usize, heads: usize, init: &mut Init) -> Self {
        assert!(
            heads > 0 && embed.is_multiple_of(heads),
            "MultiHeadAttention::new: {heads} heads do not divide the embedding width {embed}"
        );
        let mut out_proj = Linear::new(embed, embed, init);
        out_proj.bias = Tensor::zeros(&[embed]);
        MultiHeadAttention {
            // Xavier-uniform over the stacked `[3E, E]` matrix.
            in_proj_weight: init.uniform(&[3 * embed, embed], (6.0 / (4 * embed) as f64).sqrt()),
            in_proj_bias: Tensor::zeros(&[3 * embed]),
            out_proj,
            heads,
        }
    }

    /// `[len, len]`, `true` above the diagonal: position `i` attends to positions `0..=i`.
    pub fn causal_mask(len: usize) -> Tensor<bool> {
        let flags = (0..len * len).map(|k| k % len > k / len).collect();
        Tensor::from_vec(flags, &[len, len])
    }

    /// `[N, 1, 1, L]` from `[N, L]` flags that are `true` at padded positions, which no
    /// position attends to.
    #[track_caller]
    pub fn padding_mask(padded: &Tensor<bool>) -> Tensor<bool> {
        let &[n, len] = padded.shape() else {
            panic!(
                "MultiHeadAttention::padding_mask: the flags have shape {:?}, not [N, L]",
                padded.shape()
            )
        };
        padded.reshape(&[n, 1, 1, len])
    }
}

#[differentiable]
impl<T: Element> MultiHeadAttention<T> {
    /// Self-attention of `x` `[N, L, E]` where `mask` allows it: `[N, L, E]`.
    pub fn forward(&self, x: &Tensor<T>, #[nodiff] mask: &Tensor<bool>) -> Tensor<T> {
        let heads = stop_gradient(&self.heads);
        let (n, len, embed) = (x.shape()[0], x.shape()[1], x.shape()[2]);
        let width = embed / heads;
        let qkv = x.matmul(&self.in_proj_weight.t()) + &self.in_proj_bias;
        let q = qkv
            .shrink(&[(0, n), (0, len), (0, embed)])
            .reshape(&[n, len, heads, width])
            .permute(&[0, 2, 1, 3]);
        let k = qkv
            .shrink(&[(0, n), (0, len), (embed, 2 * embed)])
            .reshape(&[n, len, heads, width])
            .permute(&[0, 2, 1, 3]);
        let v = qkv
            .shrink(&[(0, n), (0, len), (2 * embed, 3 * embed)])
            .reshape(&[n, len, heads, width])
            .permute(&[0, 2, 1, 3]);
        let scores = q.matmul(&k.transpose(-2, -1)) / T::from_f64((width as f64).sqrt());
        let weights = scores.masked_fill(mask, f64::NEG_INFINITY).softmax(-1);
        let mixed = weights
            .matmul(&v)
            .permute(&[0, 2, 1, 3])
            .reshape(&[n, len, embed]);
        self.out_proj.forward(&mixed)
    }
}
