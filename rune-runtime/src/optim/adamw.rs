//! AdamW: Adam with weight decay decoupled from the gradient, as `torch.optim.AdamW`.

use super::{adam_step, check_gradient, AdamMoments, AdamState, Schedule};
use crate::element::Element;
use crate::model::Differentiable;

/// AdamW, as `torch.optim.AdamW` (no AMSGrad): at each step every parameter first decays,
/// `p ← p·(1 − lr·weight_decay)`, then takes Adam's step on the gradient as it is
/// ([`Adam`](super::Adam) adds the decay to the gradient instead, where the moment estimates
/// rescale it). PyTorch's defaults: `betas = (0.9, 0.999)`, `eps = 1e-8`,
/// `weight_decay = 0.01`. Under a [`Schedule`], `lr` is the schedule's at each step (the decay
/// is scaled by it too, as in PyTorch).
///
/// ```
/// use rune_runtime::optim::AdamW;
/// use rune_runtime::Tensor;
///
/// // A zero gradient: Adam's step is zero, the decay alone moves the parameter.
/// let mut p = Tensor::from_vec(vec![2.0_f64], &[1]);
/// let mut opt = AdamW::new(0.1).weight_decay(0.5);
/// opt.step(&mut p, &Tensor::zeros(&[1]));
/// assert_eq!(p.to_vec(), vec![2.0 * (1.0 - 0.1 * 0.5)]);
/// ```
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct AdamW<T: Element> {
    /// The learning rate.
    pub lr: T,
    /// The decay rate of the first-moment (mean) estimate.
    pub beta1: T,
    /// The decay rate of the second-moment (uncentred variance) estimate.
    pub beta2: T,
    /// Added to the denominator for numerical stability.
    pub eps: T,
    /// The decoupled decay: each step multiplies the parameters by `1 − lr·weight_decay`.
    pub weight_decay: T,
    /// The learning rate at each step, when set.
    pub schedule: Option<Schedule>,
    pub(super) state: Option<AdamState<T>>,
}

setters!(AdamW;
    /// The same optimizer with the given `eps`.
    eps,
    /// The same optimizer with the given decoupled weight decay.
    weight_decay,
);

impl<T: Element> AdamW<T> {
    /// AdamW with learning rate `lr` and PyTorch's defaults.
    pub fn new(lr: T) -> Self {
        AdamW {
            lr,
            beta1: T::from_f64(0.9),
            beta2: T::from_f64(0.999),
            eps: T::from_f64(1e-8),
            weight_decay: T::from_f64(0.01),
            schedule: None,
            state: None,
        }
    }
}

adam_methods!(AdamW, "AdamW::step", decoupled);
