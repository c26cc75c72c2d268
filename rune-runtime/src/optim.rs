//! First-order optimizers over [`Differentiable`] parameters: [`Sgd`] (with momentum, Nesterov
//! and weight decay), [`Adam`], [`AdamW`] and [`RmsProp`], each updating every leaf tensor in place from a
//! gradient of the same structure; learning-rate [`Schedule`]s they read at each step; and
//! gradient clipping ([`clip_grad_norm`], [`clip_grad_value`]).
//!
//! An optimizer keeps its state (velocities, moment estimates) as one tensor per leaf, in the
//! leaves' order, created at the first [`step`](Adam::step) from the parameters' shapes; use one
//! optimizer for one parameter structure. [`OptimizerState`] exposes that state, so that
//! `io::save_checkpoint` can save it beside the model and a run can resume bit for bit.
//!
//! Gradients accumulated over several batches before a step are a sum of gradient structures:
//! `total.axpy(1.0, &g)` (`Differentiable::axpy`) for each, then `total.scale(1.0 / k)`.

use ndarray::Zip;

use crate::element::Element;
use crate::model::Differentiable;
use crate::tensor::Tensor;

/// For optimizer `$opt`: a builder method setting each named number (`.eps(1e-6)`), and
/// `.schedule(..)`.
macro_rules! setters {
    ($opt:ident; $($(#[$doc:meta])* $name:ident),* $(,)?) => {
        impl<T: Element> $opt<T> {
            $(
                $(#[$doc])*
                #[must_use]
                pub fn $name(mut self, $name: T) -> Self {
                    self.$name = $name;
                    self
                }
            )*

            /// The same optimizer reading its learning rate from `schedule` at each step.
            #[must_use]
            pub fn schedule(mut self, schedule: Schedule) -> Self {
                self.schedule = Some(schedule);
                self
            }
        }
    };
}

/// For `Adam` and `AdamW`: `.betas(..)`, and `step`, which runs [`adam_step`] with the weight
/// decay as `$decay` (`l2`, added to the gradient, or `decoupled`, shrinking the parameters).
macro_rules! adam_methods {
    ($opt:ident, $op:literal, $decay:ident) => {
        impl<T: Element> $opt<T> {
            /// The same optimizer with the given moment decay rates.
            #[must_use]
            pub fn betas(mut self, beta1: T, beta2: T) -> Self {
                self.beta1 = beta1;
                self.beta2 = beta2;
                self
            }

            /// Updates every leaf of `params` in place from the leaf of `grads` at the same
            /// position.
            ///
            /// # Panics
            /// When `grads` does not have the leaves of `params` (count and shapes), or when
            /// `params` does not have the leaves this optimizer's moment estimates were created
            /// for.
            #[track_caller]
            pub fn step<D: Differentiable<Elem = T>>(&mut self, params: &mut D, grads: &D) {
                check_gradient($op, params, grads);
                let mut moments = AdamMoments {
                    beta1: self.beta1,
                    beta2: self.beta2,
                    eps: self.eps,
                    l2: T::zero(),
                    decoupled: T::zero(),
                };
                moments.$decay = self.weight_decay;
                adam_step(
                    $op,
                    &mut self.state,
                    &mut self.lr,
                    self.schedule.as_ref(),
                    moments,
                    params,
                    grads,
                );
            }
        }
    };
}

mod adamw;
mod clip;
mod rmsprop;
mod schedule;
mod state;
pub use adamw::AdamW;
pub use clip::{clip_grad_norm, clip_grad_value};
pub use rmsprop::RmsProp;
pub use schedule::Schedule;
pub use state::OptimizerState;

/// Stochastic gradient descent with momentum, as `torch.optim.SGD` (no dampening).
///
/// Each step computes, leaf by leaf, `g ← g + weight_decay·p`, `v ← momentum·v + g` and
/// `p ← p − lr·v` (with `nesterov`, `p ← p − lr·(g + momentum·v)`), with `v` starting at zero
/// (so the first step is `p ← p − lr·g`). With `momentum` zero no velocity is kept and the step
/// is `p ← p − lr·g`. Under a [`Schedule`], `lr` is the schedule's at each step.
///
/// ```
/// use rune_runtime::optim::Sgd;
/// use rune_runtime::Tensor;
///
/// // Minimise ½‖p‖², whose gradient is p itself.
/// let mut params = vec![Tensor::from_vec(vec![1.0, -2.0], &[2])];
/// let mut opt = Sgd::new(0.1).momentum(0.9);
/// let grads = params.clone();
/// opt.step(&mut params, &grads); // v = g = [1, -2]
/// assert_eq!(params[0].to_vec(), vec![0.9, -1.8]);
/// let grads = params.clone();
/// opt.step(&mut params, &grads); // v = 0.9·[1, -2] + [0.9, -1.8] = [1.8, -3.6]
/// assert_eq!(params[0].to_vec(), vec![0.9 - 0.1 * 1.8, -1.8 + 0.1 * 3.6]);
/// ```
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Sgd<T: Element> {
    /// The learning rate.
    pub lr: T,
    /// The momentum coefficient; zero for plain gradient descent.
    pub momentum: T,
    /// The L2 penalty's coefficient, added to the gradient as `weight_decay·p`.
    pub weight_decay: T,
    /// Nesterov momentum: each step moves along `g + momentum·v`.
    pub nesterov: bool,
    /// The learning rate at each step, when set.
    pub schedule: Option<Schedule>,
    steps: u64,
    velocity: Option<Vec<Tensor<T>>>,
}

setters!(Sgd;
    /// The same optimizer with the given momentum coefficient.
    momentum,
    /// The same optimizer with an L2 penalty of coefficient `weight_decay` on every leaf.
    weight_decay,
);

impl<T: Element> Sgd<T> {
    /// Plain gradient descent with learning rate `lr` (momentum zero).
    pub fn new(lr: T) -> Self {
        Sgd {
            lr,
            momentum: T::zero(),
            weight_decay: T::zero(),
            nesterov: false,
            schedule: None,
            steps: 0,
            velocity: None,
        }
    }

    /// The same optimizer with Nesterov momentum (`torch.optim.SGD(nesterov=True)`); its
    /// steps check that the momentum is positive.
    #[must_use]
    pub fn nesterov(mut self) -> Self {
        self.nesterov = true;
        self
    }

    /// The number of steps taken.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Updates every leaf of `params` in place from the leaf of `grads` at the same position.
    ///
    /// # Panics
    /// When `grads` does not have the leaves of `params` (count and shapes), or when `params`
    /// does not have the leaves this optimizer's velocity was created for.
    #[track_caller]
    pub fn step<D: Differentiable<Elem = T>>(&mut self, params: &mut D, grads: &D) {
        check_gradient("Sgd::step", params, grads);
        if let Some(schedule) = &self.schedule {
            self.lr = T::from_f64(schedule.lr(usize::try_from(self.steps).unwrap_or(usize::MAX)));
        }
        self.steps = self.steps.saturating_add(1);
        let (lr, momentum, decay) = (self.lr, self.momentum, self.weight_decay);
        if self.nesterov && momentum <= T::zero() {
            panic!("Sgd::step: Nesterov momentum needs a positive momentum, not {momentum:?}");
        }
        if momentum.is_zero() {
            for (p, g) in params.leaves_mut().into_iter().zip(grads.leaves()) {
                Zip::from(p.data_mut())
                    .and(g.view())
                    .for_each(|p, &g| *p -= lr * (g + decay * *p));
            }
            return;
        }
        let nesterov = self.nesterov;
        let velocity = self
            .velocity
            .get_or_insert_with(|| zero_state(params.leaves()));
        check_state("Sgd::step", params, velocity);
        for ((p, g), v) in params
            .leaves_mut()
            .into_iter()
            .zip(grads.leaves())
            .zip(velocity.iter_mut())
        {
            Zip::from(p.data_mut())
                .and(g.view())
                .and(v.data_mut())
                .for_each(|p, &g, v| {
                    let g = g + decay * *p;
                    *v = momentum * *v + g;
                    *p -= lr * if nesterov { g + momentum * *v } else { *v };
                });
        }
    }
}

/// Adam, as `torch.optim.Adam` (bias-corrected moment estimates, no AMSGrad).
///
/// At step `t` (from 1), leaf by leaf: `g ← g + weight_decay·p` (an L2 penalty; see [`AdamW`]
/// for decoupled decay), `m ← β₁m + (1−β₁)g`, `v ← β₂v + (1−β₂)g²`, and
/// `p ← p − lr·m̂ / (√v̂ + eps)` with `m̂ = m/(1−β₁ᵗ)` and `v̂ = v/(1−β₂ᵗ)`. The first step
/// therefore moves each element by about `lr` against the sign of its gradient. Under a
/// [`Schedule`], `lr` is the schedule's at each step.
///
/// ```
/// use rune_runtime::optim::Adam;
/// use rune_runtime::Tensor;
///
/// let mut params = Tensor::from_vec(vec![1.0_f64, -2.0], &[2]);
/// let grads = Tensor::from_vec(vec![0.5, -4.0], &[2]);
/// let mut opt = Adam::new(0.01).betas(0.9, 0.99).eps(1e-8);
/// opt.step(&mut params, &grads);
/// let moved: Vec<f64> = params.to_vec().iter().zip([1.0, -2.0]).map(|(p, p0)| p - p0).collect();
/// assert!((moved[0] + 0.01).abs() < 1e-9 && (moved[1] - 0.01).abs() < 1e-9);
/// ```
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Adam<T: Element> {
    /// The learning rate.
    pub lr: T,
    /// The decay rate of the first-moment (mean) estimate.
    pub beta1: T,
    /// The decay rate of the second-moment (uncentred variance) estimate.
    pub beta2: T,
    /// Added to the denominator for numerical stability.
    pub eps: T,
    /// The L2 penalty's coefficient, added to the gradient as `weight_decay·p`.
    pub weight_decay: T,
    /// The learning rate at each step, when set.
    pub schedule: Option<Schedule>,
    state: Option<AdamState<T>>,
}

/// Adam's per-leaf moment estimates and the number of steps taken.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct AdamState<T> {
    steps: i32,
    first_moment: Vec<Tensor<T>>,
    second_moment: Vec<Tensor<T>>,
}

setters!(Adam;
    /// The same optimizer with the given `eps`.
    eps,
    /// The same optimizer with an L2 penalty of coefficient `weight_decay` on every leaf.
    weight_decay,
);

impl<T: Element> Adam<T> {
    /// Adam with learning rate `lr` and PyTorch's defaults `beta1 = 0.9`, `beta2 = 0.999`,
    /// `eps = 1e-8`.
    pub fn new(lr: T) -> Self {
        Adam {
            lr,
            beta1: T::from_f64(0.9),
            beta2: T::from_f64(0.999),
            eps: T::from_f64(1e-8),
            weight_decay: T::zero(),
            schedule: None,
            state: None,
        }
    }
}

adam_methods!(Adam, "Adam::step", l2);

/// The coefficients of one Adam step: an L2 penalty added to the gradient (`Adam`), or a decay
/// of the parameters decoupled from it (`AdamW`).
#[derive(Clone, Copy)]
struct AdamMoments<T> {
    beta1: T,
    beta2: T,
    eps: T,
    l2: T,
    decoupled: T,
}

/// One step of Adam or AdamW: the state created at the first, `lr` read from the schedule.
#[track_caller]
fn adam_step<T: Element, D: Differentiable<Elem = T>>(
    op: &str,
    state: &mut Option<AdamState<T>>,
    lr: &mut T,
    schedule: Option<&Schedule>,
    c: AdamMoments<T>,
    params: &mut D,
    grads: &D,
) {
    let state = state.get_or_insert_with(|| AdamState {
        steps: 0,
        first_moment: zero_state(params.leaves()),
        second_moment: zero_state(params.leaves()),
    });
    check_state(op, params, &state.first_moment);
    if let Some(schedule) = schedule {
        *lr = T::from_f64(schedule.lr(usize::try_from(state.steps).unwrap_or(0)));
    }
    // Past 2³¹ steps βᵗ has long underflowed to zero; saturating keeps `powi` defined.
    state.steps = state.steps.saturating_add(1);
    let AdamMoments {
        beta1,
        beta2,
        eps,
        l2,
        decoupled,
    } = c;
    let one = T::one();
    let step_size = *lr / (one - beta1.powi(state.steps));
    let bias_correction2_sqrt = (one - beta2.powi(state.steps)).sqrt();
    let shrink = one - *lr * decoupled;
    let leaves = params
        .leaves_mut()
        .into_iter()
        .zip(grads.leaves())
        .zip(state.first_moment.iter_mut())
        .zip(state.second_moment.iter_mut());
    for (((p, g), m), v) in leaves {
        Zip::from(p.data_mut())
            .and(g.view())
            .and(m.data_mut())
            .and(v.data_mut())
            .for_each(|p, &g, m, v| {
                let g = g + l2 * *p;
                *p *= shrink;
                *m = beta1 * *m + (one - beta1) * g;
                *v = beta2 * *v + (one - beta2) * g * g;
                let denom = v.sqrt() / bias_correction2_sqrt + eps;
                *p -= step_size * *m / denom;
            });
    }
}

/// One zero tensor per leaf.
fn zero_state<T: Element>(leaves: Vec<&Tensor<T>>) -> Vec<Tensor<T>> {
    leaves.into_iter().map(Tensor::zeros_like).collect()
}

/// Panics unless `grads` has the leaves of `params`: as many, of the same shapes.
#[track_caller]
fn check_gradient<D: Differentiable>(op: &str, params: &D, grads: &D) {
    let (p, g) = (params.leaves(), grads.leaves());
    if p.len() != g.len() {
        panic!(
            "{op}: the parameters have {} leaf tensors but the gradient has {}",
            p.len(),
            g.len()
        );
    }
    if let Some(i) = (0..p.len()).find(|&i| p[i].shape() != g[i].shape()) {
        panic!(
            "{op}: the gradient of `{}` has shape {:?}, the parameter has shape {:?}",
            params.leaf_paths("")[i],
            g[i].shape(),
            p[i].shape()
        );
    }
}

/// Panics unless `state` has one tensor of each leaf's shape: the parameters are those the
/// optimizer started with.
#[track_caller]
fn check_state<D: Differentiable>(op: &str, params: &D, state: &[Tensor<D::Elem>]) {
    let p = params.leaves();
    let matches =
        p.len() == state.len() && p.iter().zip(state).all(|(p, s)| p.shape() == s.shape());
    if !matches {
        panic!(
            "{op}: the parameters' leaves (shapes {:?}) are not those of the first step \
             (shapes {:?}); use a new optimizer for different parameters",
            p.iter().map(|t| t.shape()).collect::<Vec<_>>(),
            state.iter().map(Tensor::shape).collect::<Vec<_>>()
        );
    }
}
