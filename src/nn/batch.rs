//! Batch normalisation and dropout: the layers whose behaviour differs between training and
//! evaluation.

use super::Init;
use crate::{differentiable, stop_gradient, Differentiable, Element, Tensor};

/// `torch.nn.BatchNorm1d`/`BatchNorm2d(num_features)` on `[N, C]` or `[N, C, H, W]`: in
/// training each channel is standardised with the batch's mean and biased variance (over every
/// axis but 1), in evaluation with the running statistics; then scaled by `weight` (ones at
/// first) and shifted by `bias` (zeros). `eps` 1e-5, `momentum` 0.1.
///
/// The running statistics are not differentiated: after a training step, outside the
/// differentiated function, [`update_stats`](Self::update_stats) folds the batch's in (PyTorch
/// does the same inside `forward`, as a side effect).
#[derive(Clone, Debug, Differentiable)]
pub struct BatchNorm<T: Element> {
    /// `[C]`.
    pub weight: Tensor<T>,
    /// `[C]`.
    pub bias: Tensor<T>,
    /// `[C]`, zeros at first; a buffer, saved with the model.
    #[buffer]
    pub running_mean: Tensor<T>,
    /// `[C]`, ones at first (the unbiased variances of the batches seen); a buffer.
    #[buffer]
    pub running_var: Tensor<T>,
    /// Added to the variance.
    #[nodiff]
    pub eps: f64,
    /// The weight of each new batch in the running statistics.
    #[nodiff]
    pub momentum: f64,
    /// Batch statistics (training) or running ones (evaluation).
    #[nodiff]
    pub training: bool,
}

impl<T: Element> BatchNorm<T> {
    /// A batch norm over `channels`, in training mode, as PyTorch's.
    pub fn new(channels: usize) -> Self {
        BatchNorm {
            weight: Tensor::ones(&[channels]),
            bias: Tensor::zeros(&[channels]),
            running_mean: Tensor::zeros(&[channels]),
            running_var: Tensor::ones(&[channels]),
            eps: 1e-5,
            momentum: 0.1,
            training: true,
        }
    }

    /// Folds batch `x`'s statistics into the running ones:
    /// `running ← (1 − momentum)·running + momentum·batch`, with the unbiased variance.
    ///
    /// # Panics
    /// When `x` is not `[N, C, ..]` with `C` channels and more than one value per channel.
    #[track_caller]
    pub fn update_stats(&mut self, x: &Tensor<T>) {
        let channels = self.weight.len();
        assert!(
            x.ndim() >= 2 && x.shape()[1] == channels,
            "BatchNorm::update_stats: the batch has shape {:?}, not [N, {channels}, ..]",
            x.shape()
        );
        let axes = other_axes(x.ndim());
        let count = x.len() / channels;
        assert!(
            count > 1,
            "BatchNorm::update_stats: one value per channel has no variance"
        );
        let mean = x.mean_axes(&axes, false);
        let var = x.var_axes(&axes, false, 1);
        let m = T::from_f64(self.momentum);
        let keep = T::one() - m;
        self.running_mean = &self.running_mean * keep + mean * m;
        self.running_var = &self.running_var * keep + var * m;
    }
}

/// Every axis of an `ndim`-axis batch but the channels' (1).
fn other_axes(ndim: usize) -> Vec<isize> {
    (0..ndim as isize).filter(|&a| a != 1).collect()
}

#[differentiable]
impl<T: Element> BatchNorm<T> {
    /// `x` `[N, C, ..]` standardised per channel, scaled and shifted.
    pub fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        let (training, eps) = (stop_gradient(&self.training), stop_gradient(&self.eps));
        let channels = self.weight.len();
        let shape: Vec<usize> = (0..x.ndim())
            .map(|a| if a == 1 { channels } else { 1 })
            .collect();
        let standard = if training {
            let axes = other_axes(x.ndim());
            let centred = x - x.mean_axes(&axes, true);
            let var = x.var_axes(&axes, true, 0);
            centred / (var + T::from_f64(eps)).sqrt()
        } else {
            let mean = stop_gradient(&self.running_mean).reshape(&shape);
            let var = stop_gradient(&self.running_var).reshape(&shape);
            (x - mean) / (var + T::from_f64(eps)).sqrt()
        };
        standard * self.weight.reshape(&shape) + self.bias.reshape(&shape)
    }
}

/// `torch.nn.Dropout(p)`: in training each element is zeroed with probability `p` and the rest
/// scaled by `1/(1 − p)`; in evaluation nothing changes. The randomness is explicit: draw a
/// mask with [`mask`](Self::mask) from a seeded [`Init`] outside the differentiated function
/// and multiply by it inside (`h * &mask`), where it is a constant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dropout {
    /// The probability of zeroing an element.
    pub p: f64,
}

impl Dropout {
    /// Dropout with probability `p`.
    ///
    /// # Panics
    /// When `p` is not in `[0, 1)`.
    #[track_caller]
    pub fn new(p: f64) -> Self {
        assert!(
            (0.0..1.0).contains(&p),
            "Dropout::new: the probability {p} is not in [0, 1)"
        );
        Dropout { p }
    }

    /// The multiplier for a tensor of `shape`: in training `0` with probability `p` and
    /// `1/(1 − p)` otherwise, drawn from `rng`; in evaluation ones.
    pub fn mask<T: Element>(&self, shape: &[usize], rng: &mut Init, training: bool) -> Tensor<T> {
        if !training || self.p == 0.0 {
            return Tensor::ones(shape);
        }
        let u: Tensor<f64> = rng.uniform(shape, 1.0);
        let scale = 1.0 / (1.0 - self.p);
        // `u` is uniform on [−1, 1): below 2p − 1 with probability p.
        let threshold = 2.0 * self.p - 1.0;
        let values = u
            .to_vec()
            .into_iter()
            .map(|v| T::from_f64(if v < threshold { 0.0 } else { scale }))
            .collect();
        Tensor::from_vec(values, shape)
    }
}
