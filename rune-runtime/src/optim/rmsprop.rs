//! RMSprop, as `torch.optim.RMSprop`.

use ndarray::Zip;

use super::{check_gradient, check_state, zero_state, Schedule};
use crate::element::Element;
use crate::model::Differentiable;
use crate::tensor::Tensor;

/// RMSprop, as `torch.optim.RMSprop`: leaf by leaf, `g ← g + weight_decay·p`,
/// `s ← α s + (1 − α) g²`, and with `centered` also `ḡ ← α ḡ + (1 − α) g` and `s − ḡ²` in place
/// of `s` below; then `d = g / (√s + eps)`, and `p ← p − lr·d`, or with momentum
/// `b ← momentum·b + d`, `p ← p − lr·b`. PyTorch's defaults: `alpha = 0.99`, `eps = 1e-8`,
/// no momentum, not centred. Under a [`Schedule`], `lr` is the schedule's at each step.
///
/// ```
/// use rune_runtime::optim::RmsProp;
/// use rune_runtime::Tensor;
///
/// // The first step: s = (1 − α) g², so p moves by lr·g / (√(1 − α)·|g| + eps).
/// let mut p = Tensor::from_vec(vec![1.0_f64], &[1]);
/// RmsProp::new(0.01).step(&mut p, &Tensor::from_vec(vec![2.0], &[1]));
/// let expected = 1.0 - 0.01 * 2.0 / ((0.01_f64 * 4.0).sqrt() + 1e-8);
/// assert!((p.item() - expected).abs() < 1e-15);
/// ```
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RmsProp<T: Element> {
    /// The learning rate.
    pub lr: T,
    /// The decay rate of the mean square (and, centred, of the mean).
    pub alpha: T,
    /// Added to the denominator for numerical stability.
    pub eps: T,
    /// The L2 penalty's coefficient, added to the gradient as `weight_decay·p`.
    pub weight_decay: T,
    /// The momentum coefficient; zero for none.
    pub momentum: T,
    /// Divide by the estimated variance (mean square minus squared mean) instead of the mean
    /// square.
    pub centered: bool,
    /// The learning rate at each step, when set.
    pub schedule: Option<Schedule>,
    pub(super) state: Option<RmsPropState<T>>,
}

/// RMSprop's per-leaf buffers and the number of steps taken.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(super) struct RmsPropState<T> {
    pub(super) steps: u64,
    pub(super) square_avg: Vec<Tensor<T>>,
    pub(super) momentum_buffer: Vec<Tensor<T>>,
    pub(super) grad_avg: Vec<Tensor<T>>,
}

setters!(RmsProp;
    /// The same optimizer with the given decay rate `alpha`.
    alpha,
    /// The same optimizer with the given `eps`.
    eps,
    /// The same optimizer with an L2 penalty of coefficient `weight_decay` on every leaf.
    weight_decay,
    /// The same optimizer with the given momentum coefficient.
    momentum,
);

impl<T: Element> RmsProp<T> {
    /// RMSprop with learning rate `lr` and PyTorch's defaults.
    pub fn new(lr: T) -> Self {
        RmsProp {
            lr,
            alpha: T::from_f64(0.99),
            eps: T::from_f64(1e-8),
            weight_decay: T::zero(),
            momentum: T::zero(),
            centered: false,
            schedule: None,
            state: None,
        }
    }

    /// The same optimizer, centred.
    #[must_use]
    pub fn centered(mut self) -> Self {
        self.centered = true;
        self
    }

    /// Updates every leaf of `params` in place from the leaf of `grads` at the same position.
    ///
    /// # Panics
    /// When `grads` does not have the leaves of `params` (count and shapes), or when `params`
    /// does not have the leaves this optimizer's buffers were created for.
    #[track_caller]
    pub fn step<D: Differentiable<Elem = T>>(&mut self, params: &mut D, grads: &D) {
        check_gradient("RmsProp::step", params, grads);
        let state = self.state.get_or_insert_with(|| RmsPropState {
            steps: 0,
            square_avg: zero_state(params.leaves()),
            momentum_buffer: zero_state(params.leaves()),
            grad_avg: zero_state(params.leaves()),
        });
        check_state("RmsProp::step", params, &state.square_avg);
        if let Some(schedule) = &self.schedule {
            self.lr = T::from_f64(schedule.lr(usize::try_from(state.steps).unwrap_or(usize::MAX)));
        }
        state.steps = state.steps.saturating_add(1);
        let (lr, alpha, eps, decay, momentum, centered) = (
            self.lr,
            self.alpha,
            self.eps,
            self.weight_decay,
            self.momentum,
            self.centered,
        );
        let one = T::one();
        let leaves = params
            .leaves_mut()
            .into_iter()
            .zip(grads.leaves())
            .zip(state.square_avg.iter_mut())
            .zip(state.momentum_buffer.iter_mut())
            .zip(state.grad_avg.iter_mut());
        for ((((p, g), s), b), m) in leaves {
            Zip::from(p.data_mut())
                .and(g.view())
                .and(s.data_mut())
                .and(b.data_mut())
                .and(m.data_mut())
                .for_each(|p, &g, s, b, m| {
                    let g = g + decay * *p;
                    *s = alpha * *s + (one - alpha) * g * g;
                    let mean_square = if centered {
                        *m = alpha * *m + (one - alpha) * g;
                        *s - *m * *m
                    } else {
                        *s
                    };
                    let d = g / (mean_square.sqrt() + eps);
                    if momentum > T::zero() {
                        *b = momentum * *b + d;
                        *p -= lr * *b;
                    } else {
                        *p -= lr * d;
                    }
                });
        }
    }
}
