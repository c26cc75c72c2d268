//! The layers: each PyTorch's parameters by name and layout, and its forward pass.

use super::Init;
use crate::{differentiable, embedding, stop_gradient, Differentiable, Element, Tensor};

/// `torch.nn.Linear(in_features, out_features)`: `y = x Wᵀ + b`, `weight` `[out, in]`, `bias`
/// `[out]`, both uniform on `±1/√in` at first.
#[derive(Clone, Debug, Differentiable)]
pub struct Linear<T: Element> {
    /// `[out_features, in_features]`.
    pub weight: Tensor<T>,
    /// `[out_features]`.
    pub bias: Tensor<T>,
}

/// `torch.nn.LayerNorm(normalized_shape = [features])`: each row standardised over its last
/// axis (biased variance, `eps` 1e-5), then scaled by `weight` (ones at first) and shifted by
/// `bias` (zeros).
#[derive(Clone, Debug, Differentiable)]
pub struct LayerNorm<T: Element> {
    /// `[features]`.
    pub weight: Tensor<T>,
    /// `[features]`.
    pub bias: Tensor<T>,
    /// Added to the variance.
    #[nodiff]
    pub eps: f64,
}

/// `torch.nn.RMSNorm([features])`: `x / √(mean(x²) + eps) · weight` over the last axis, `weight`
/// ones at first, `eps` the element type's machine epsilon (PyTorch's default).
#[derive(Clone, Debug, Differentiable)]
pub struct RmsNorm<T: Element> {
    /// `[features]`.
    pub weight: Tensor<T>,
    /// Added to the mean square.
    #[nodiff]
    pub eps: f64,
}

/// `torch.nn.Embedding(num_embeddings, embedding_dim)`: row `i` of `weight` for id `i`,
/// `weight` `[num, dim]` standard normal at first. The gradient of `weight` adds each id's
/// cotangent into its row (a repeated id's add up).
#[derive(Clone, Debug, Differentiable)]
pub struct Embedding<T: Element> {
    /// `[num_embeddings, embedding_dim]`.
    pub weight: Tensor<T>,
}

/// A multilayer perceptron: `Linear` layers with `tanh` between them (not after the last).
#[derive(Clone, Debug, Differentiable)]
pub struct Mlp<T: Element> {
    /// The layers, first to last.
    pub layers: Vec<Linear<T>>,
}

impl<T: Element> Linear<T> {
    /// A layer from `inputs` to `outputs` features, initialised as PyTorch's.
    pub fn new(inputs: usize, outputs: usize, init: &mut Init) -> Self {
        Linear {
            weight: init.fan_in(&[outputs, inputs], inputs),
            bias: init.fan_in(&[outputs], inputs),
        }
    }
}

impl<T: Element> LayerNorm<T> {
    /// A layer norm over `features`, as PyTorch's (`eps` 1e-5).
    pub fn new(features: usize) -> Self {
        LayerNorm {
            weight: Tensor::ones(&[features]),
            bias: Tensor::zeros(&[features]),
            eps: 1e-5,
        }
    }
}

impl<T: Element> RmsNorm<T> {
    /// An RMS norm over `features`, as PyTorch's.
    pub fn new(features: usize) -> Self {
        RmsNorm {
            weight: Tensor::ones(&[features]),
            eps: T::epsilon().to_f64().unwrap_or(f64::EPSILON),
        }
    }
}

impl<T: Element> Embedding<T> {
    /// `num` embeddings of `dim` features, initialised as PyTorch's.
    pub fn new(num: usize, dim: usize, init: &mut Init) -> Self {
        Embedding {
            weight: init.normal(&[num, dim], 0.0, 1.0),
        }
    }
}

impl<T: Element> Mlp<T> {
    /// Layers of the given widths (`[inputs, hidden.., outputs]`), initialised as PyTorch's.
    ///
    /// # Panics
    /// When fewer than two widths are given.
    #[track_caller]
    pub fn new(widths: &[usize], init: &mut Init) -> Self {
        assert!(
            widths.len() >= 2,
            "Mlp::new: widths {widths:?} need an input and an output width"
        );
        Mlp {
            layers: widths
                .windows(2)
                .map(|w| Linear::new(w[0], w[1], init))
                .collect(),
        }
    }
}

#[differentiable]
impl<T: Element> Linear<T> {
    /// `x Wᵀ + b` over the last axis of `x`.
    pub fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        x.matmul(&self.weight.t()) + &self.bias
    }
}

#[differentiable]
impl<T: Element> Embedding<T> {
    /// The rows of `weight` for `ids` (any shape): `[..ids, dim]`; an id negative or not below
    /// `num_embeddings` panics naming it.
    pub fn forward(&self, #[nodiff] ids: &Tensor<i64>) -> Tensor<T> {
        embedding(ids, &self.weight)
    }
}

#[differentiable]
impl<T: Element> LayerNorm<T> {
    /// `x` standardised over its last axis, scaled and shifted.
    pub fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        let features = self.weight.len();
        let eps = stop_gradient(&self.eps);
        x.layer_norm(&[features], eps) * &self.weight + &self.bias
    }
}

#[differentiable]
impl<T: Element> RmsNorm<T> {
    /// `x` divided by its root mean square over the last axis, scaled.
    pub fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        let eps = T::from_f64(stop_gradient(&self.eps));
        let ms = x.square().mean_axes(&[-1], true);
        x / (ms + eps).sqrt() * &self.weight
    }
}

#[differentiable]
impl<T: Element> Mlp<T> {
    /// The layers in turn, `tanh` between them.
    pub fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        let last = self.layers.len() - 1;
        let mut h = x.clone();
        for (i, layer) in self.layers.iter().enumerate() {
            h = layer.forward(&h);
            if i < last {
                h = h.tanh();
            }
        }
        h
    }
}
