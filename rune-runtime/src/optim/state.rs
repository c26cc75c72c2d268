//! What an optimizer carries from one step to the next, exposed by [`OptimizerState`] so that
//! a checkpoint can hold it and training can resume exactly where it stopped.

use super::rmsprop::RmsPropState;
use super::{Adam, AdamState, AdamW, RmsProp, Sgd};
use crate::element::Element;
use crate::tensor::Tensor;

/// An optimizer whose state can be saved and restored: its numbers (hyperparameters and step
/// count) and its per-leaf buffers (moment estimates, velocities), one tensor per parameter
/// leaf in leaf order. `io::save_checkpoint` writes them beside a model;
/// `io::load_checkpoint` restores them, after which the optimizer's next step is
/// bit for bit the one it would have taken had it never stopped.
///
/// The names are PyTorch's (`exp_avg`, `exp_avg_sq`, `momentum_buffer`, `step`, `lr`, ...).
pub trait OptimizerState {
    /// The element type of the parameters and buffers.
    type Elem: Element;

    /// The names of the numbers, in the order [`numbers`](Self::numbers) gives them.
    fn number_names(&self) -> &'static [&'static str];

    /// The numbers, exactly: hyperparameters widened to `f64` and the step count.
    fn numbers(&self) -> Vec<f64>;

    /// The names of the per-leaf buffers, in the order [`buffers`](Self::buffers) gives them.
    fn buffer_names(&self) -> &'static [&'static str];

    /// The per-leaf buffers, each one tensor per leaf; `None` while the optimizer has none (before
    /// its first step, or for plain gradient descent).
    fn buffers(&self) -> Option<Vec<&[Tensor<Self::Elem>]>>;

    /// Sets the numbers and buffers to values [`numbers`](Self::numbers) and
    /// [`buffers`](Self::buffers) returned (the buffers checked against the parameters by the
    /// caller). Returns a sentence naming the number at fault when one is out of its range.
    fn restore(
        &mut self,
        numbers: &[f64],
        buffers: Option<Vec<Vec<Tensor<Self::Elem>>>>,
    ) -> Result<(), String>;
}

/// `x` as `T`, when the conversion is exact (a saved `f32` widened to `f64` comes back).
fn exact<T: Element>(name: &str, x: f64) -> Result<T, String> {
    let t = T::from_f64(x);
    if t.to_f64() == Some(x) || (x.is_nan() && t.is_nan()) {
        Ok(t)
    } else {
        Err(format!(
            "`{name}` is {x}, which {} cannot hold exactly",
            T::NAME
        ))
    }
}

/// Adam's and AdamW's state: the same numbers and buffers.
macro_rules! adam_state {
    ($name:ident, $label:literal) => {
        impl<T: Element> OptimizerState for $name<T> {
            type Elem = T;

            fn number_names(&self) -> &'static [&'static str] {
                &["lr", "beta1", "beta2", "eps", "weight_decay", "step"]
            }

            fn numbers(&self) -> Vec<f64> {
                let wide = |x: T| x.to_f64().expect("an element converts to f64");
                let steps = self.state.as_ref().map_or(0, |s| s.steps);
                vec![
                    wide(self.lr),
                    wide(self.beta1),
                    wide(self.beta2),
                    wide(self.eps),
                    wide(self.weight_decay),
                    f64::from(steps),
                ]
            }

            fn buffer_names(&self) -> &'static [&'static str] {
                &["exp_avg", "exp_avg_sq"]
            }

            fn buffers(&self) -> Option<Vec<&[Tensor<T>]>> {
                self.state
                    .as_ref()
                    .map(|s| vec![s.first_moment.as_slice(), s.second_moment.as_slice()])
            }

            fn restore(
                &mut self,
                numbers: &[f64],
                buffers: Option<Vec<Vec<Tensor<T>>>>,
            ) -> Result<(), String> {
                let [lr, beta1, beta2, eps, weight_decay, step] = numbers else {
                    return Err(format!(
                        concat!($label, " keeps 6 numbers, not {}"),
                        numbers.len()
                    ));
                };
                let steps = count(*step)?;
                let numbers = (
                    exact("lr", *lr)?,
                    exact("beta1", *beta1)?,
                    exact("beta2", *beta2)?,
                    exact("eps", *eps)?,
                    exact("weight_decay", *weight_decay)?,
                );
                let state = match buffers {
                    None if steps == 0 => None,
                    None => {
                        return Err(format!(
                            "`step` is {steps} but there are no moment estimates"
                        ))
                    }
                    Some(buffers) => {
                        let [first_moment, second_moment]: [Vec<Tensor<T>>; 2] =
                            buffers.try_into().map_err(|b: Vec<_>| {
                                format!(
                                    concat!($label, " keeps 2 buffers per leaf, not {}"),
                                    b.len()
                                )
                            })?;
                        Some(AdamState {
                            steps,
                            first_moment,
                            second_moment,
                        })
                    }
                };
                (self.lr, self.beta1, self.beta2, self.eps, self.weight_decay) = numbers;
                self.state = state;
                Ok(())
            }
        }
    };
}

adam_state!(Adam, "Adam");
adam_state!(AdamW, "AdamW");

/// A saved step count.
fn count<N: TryFrom<i64>>(step: f64) -> Result<N, String> {
    let whole = step as i64;
    match N::try_from(whole) {
        Ok(n) if whole as f64 == step && whole >= 0 => Ok(n),
        _ => Err(format!("`step` is {step}, not a step count")),
    }
}

impl<T: Element> OptimizerState for Sgd<T> {
    type Elem = T;

    fn number_names(&self) -> &'static [&'static str] {
        &["lr", "momentum", "weight_decay", "nesterov", "step"]
    }

    fn numbers(&self) -> Vec<f64> {
        let wide = |x: T| x.to_f64().expect("an element converts to f64");
        vec![
            wide(self.lr),
            wide(self.momentum),
            wide(self.weight_decay),
            f64::from(u8::from(self.nesterov)),
            self.steps as f64,
        ]
    }

    fn buffer_names(&self) -> &'static [&'static str] {
        &["momentum_buffer"]
    }

    fn buffers(&self) -> Option<Vec<&[Tensor<T>]>> {
        self.velocity.as_ref().map(|v| vec![v.as_slice()])
    }

    fn restore(
        &mut self,
        numbers: &[f64],
        buffers: Option<Vec<Vec<Tensor<T>>>>,
    ) -> Result<(), String> {
        let [lr, momentum, weight_decay, nesterov, step] = numbers else {
            return Err(format!("Sgd keeps 5 numbers, not {}", numbers.len()));
        };
        let (lr, momentum, weight_decay) = (
            exact("lr", *lr)?,
            exact("momentum", *momentum)?,
            exact("weight_decay", *weight_decay)?,
        );
        let nesterov = match *nesterov {
            0.0 => false,
            1.0 => true,
            other => return Err(format!("`nesterov` is {other}, not 0 or 1")),
        };
        let steps = count(*step)?;
        let velocity = match buffers {
            None => None,
            Some(mut buffers) if buffers.len() == 1 => buffers.pop(),
            Some(buffers) => {
                return Err(format!(
                    "Sgd keeps 1 buffer per leaf, not {}",
                    buffers.len()
                ))
            }
        };
        (
            self.lr,
            self.momentum,
            self.weight_decay,
            self.nesterov,
            self.steps,
            self.velocity,
        ) = (lr, momentum, weight_decay, nesterov, steps, velocity);
        Ok(())
    }
}

impl<T: Element> OptimizerState for RmsProp<T> {
    type Elem = T;

    fn number_names(&self) -> &'static [&'static str] {
        &[
            "lr",
            "alpha",
            "eps",
            "weight_decay",
            "momentum",
            "centered",
            "step",
        ]
    }

    fn numbers(&self) -> Vec<f64> {
        let wide = |x: T| x.to_f64().expect("an element converts to f64");
        let steps = self.state.as_ref().map_or(0, |s| s.steps);
        vec![
            wide(self.lr),
            wide(self.alpha),
            wide(self.eps),
            wide(self.weight_decay),
            wide(self.momentum),
            f64::from(u8::from(self.centered)),
            steps as f64,
        ]
    }

    fn buffer_names(&self) -> &'static [&'static str] {
        &["square_avg", "momentum_buffer", "grad_avg"]
    }

    fn buffers(&self) -> Option<Vec<&[Tensor<T>]>> {
        self.state.as_ref().map(|s| {
            vec![
                s.square_avg.as_slice(),
                s.momentum_buffer.as_slice(),
                s.grad_avg.as_slice(),
            ]
        })
    }

    fn restore(
        &mut self,
        numbers: &[f64],
        buffers: Option<Vec<Vec<Tensor<T>>>>,
    ) -> Result<(), String> {
        let [lr, alpha, eps, weight_decay, momentum, centered, step] = numbers else {
            return Err(format!("RmsProp keeps 7 numbers, not {}", numbers.len()));
        };
        let numbers = (
            exact("lr", *lr)?,
            exact("alpha", *alpha)?,
            exact("eps", *eps)?,
            exact("weight_decay", *weight_decay)?,
            exact("momentum", *momentum)?,
        );
        let centered = match *centered {
            0.0 => false,
            1.0 => true,
            other => return Err(format!("`centered` is {other}, not 0 or 1")),
        };
        let steps = count(*step)?;
        let state = match buffers {
            None if steps == 0 => None,
            None => return Err(format!("`step` is {steps} but there are no buffers")),
            Some(buffers) => {
                let [square_avg, momentum_buffer, grad_avg]: [Vec<Tensor<T>>; 3] =
                    buffers.try_into().map_err(|b: Vec<_>| {
                        format!("RmsProp keeps 3 buffers per leaf, not {}", b.len())
                    })?;
                Some(RmsPropState {
                    steps,
                    square_avg,
                    momentum_buffer,
                    grad_avg,
                })
            }
        };
        (
            self.lr,
            self.alpha,
            self.eps,
            self.weight_decay,
            self.momentum,
        ) = numbers;
        self.centered = centered;
        self.state = state;
        Ok(())
    }
}
