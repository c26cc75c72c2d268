//! The character-level transformer of the `char_lm` example, from `rune_ad::nn`'s layers: token
//! and position embeddings, pre-norm blocks of causal self-attention and an MLP, each added to
//! the residual stream, a final layer norm and a linear head giving one logit per character.
//!
//! Generic over the element type, so that `tests/char_lm.rs` checks the same code's gradient in
//! `f64` while the example trains in `f32`.

use rune_ad::nn::{Embedding, Init, LayerNorm, Linear, Mlp, MultiHeadAttention};
use rune_ad::prelude::*;

/// The sizes of a model.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Distinct characters: the rows of the token embedding and the head's outputs.
    pub vocab: usize,
    /// The longest window the model reads (the rows of the position embedding).
    pub context: usize,
    /// The width of the residual stream.
    pub width: usize,
    /// Attention heads per block; they divide `width`.
    pub heads: usize,
    /// Transformer blocks.
    pub layers: usize,
}

/// One pre-norm block: `x + attention(norm(x))`, then `h + mlp(norm(h))`.
#[derive(Clone, Differentiable)]
pub struct Block<T: Element> {
    pub attention_norm: LayerNorm<T>,
    pub attention: MultiHeadAttention<T>,
    pub mlp_norm: LayerNorm<T>,
    /// `width → 4·width → width`, `tanh` between.
    pub mlp: Mlp<T>,
}

/// The language model: the logits of the next character at every position of a window.
#[derive(Clone, Differentiable)]
pub struct CharLm<T: Element> {
    pub token: Embedding<T>,
    pub position: Embedding<T>,
    pub blocks: Vec<Block<T>>,
    pub norm: LayerNorm<T>,
    pub head: Linear<T>,
}

impl<T: Element> CharLm<T> {
    /// A model of the given sizes with PyTorch's default initialisation of each layer, drawn
    /// from `init` in the order of the fields.
    pub fn new(config: Config, init: &mut Init) -> Self {
        let Config {
            vocab,
            context,
            width,
            heads,
            layers,
        } = config;
        CharLm {
            token: Embedding::new(vocab, width, init),
            position: Embedding::new(context, width, init),
            blocks: (0..layers)
                .map(|_| Block {
                    attention_norm: LayerNorm::new(width),
                    attention: MultiHeadAttention::new(width, heads, init),
                    mlp_norm: LayerNorm::new(width),
                    mlp: Mlp::new(&[width, 4 * width, width], init),
                })
                .collect(),
            norm: LayerNorm::new(width),
            head: Linear::new(width, vocab, init),
        }
    }

    /// The number of parameters.
    pub fn parameters(&self) -> usize {
        self.leaves().iter().map(|leaf| leaf.len()).sum()
    }
}

#[differentiable]
impl<T: Element> Block<T> {
    /// The block applied to the residual stream `x` `[N, L, width]`.
    pub fn forward(&self, x: &Tensor<T>, #[nodiff] mask: &Tensor<bool>) -> Tensor<T> {
        let h = x + self
            .attention
            .forward(&self.attention_norm.forward(x), mask);
        &h + self.mlp.forward(&self.mlp_norm.forward(&h))
    }
}

#[differentiable]
impl<T: Element> CharLm<T> {
    /// The logits `[N, L, vocab]` of the character after each position of the windows `ids`
    /// `[N, L]` (`L` at most `context`); position `i` sees positions `0..=i` only.
    pub fn logits(&self, #[nodiff] ids: &Tensor<i64>) -> Tensor<T> {
        let len = ids.shape()[1];
        let width = self.position.weight.shape()[1];
        let mask = MultiHeadAttention::<T>::causal_mask(len);
        // Rows `0..len` of the position embedding, broadcast over the batch.
        let positions = self.position.weight.shrink(&[(0, len), (0, width)]);
        let mut h = self.token.forward(ids) + positions;
        for block in &self.blocks {
            h = block.forward(&h, &mask);
        }
        self.head.forward(&self.norm.forward(&h))
    }

    /// The mean cross-entropy, in nats per character, of `targets` `[N, L, 1]` (each window's
    /// characters shifted by one) under the model reading `ids` `[N, L]`.
    pub fn loss(&self, #[nodiff] ids: &Tensor<i64>, #[nodiff] targets: &Tensor<i64>) -> Tensor<T> {
        let log_p = self.logits(ids).log_softmax(-1);
        -log_p.gather(2, targets).mean()
    }
}
