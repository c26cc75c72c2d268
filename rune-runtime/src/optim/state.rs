//! What an optimizer carries from one step to the next, exposed by [`OptimizerState`] so that
//! a checkpoint can hold it and training can resume exactly where it stopped.

use super::{Adam, AdamState, Sgd};
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

impl<T: Element> OptimizerState for Adam<T> {
    type Elem = T;

    fn number_names(&self) -> &'static [&'static str] {
        &["lr", "beta1", "beta2", "eps", "step"]
    }

    fn numbers(&self) -> Vec<f64> {
        let wide = |x: T| x.to_f64().expect("an element converts to f64");
        let steps = self.state.as_ref().map_or(0, |s| s.steps);
        vec![
            wide(self.lr),
            wide(self.beta1),
            wide(self.beta2),
            wide(self.eps),
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
        let [lr, beta1, beta2, eps, step] = numbers else {
            return Err(format!("Adam keeps 5 numbers, not {}", numbers.len()));
        };
        let steps = *step as i32;
        if f64::from(steps) != *step || steps < 0 {
            return Err(format!("`step` is {step}, not a step count"));
        }
        let (lr, beta1, beta2, eps) = (
            exact("lr", *lr)?,
            exact("beta1", *beta1)?,
            exact("beta2", *beta2)?,
            exact("eps", *eps)?,
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
                        format!("Adam keeps 2 buffers per leaf, not {}", b.len())
                    })?;
                Some(AdamState {
                    steps,
                    first_moment,
                    second_moment,
                })
            }
        };
        (self.lr, self.beta1, self.beta2, self.eps) = (lr, beta1, beta2, eps);
        self.state = state;
        Ok(())
    }
}

impl<T: Element> OptimizerState for Sgd<T> {
    type Elem = T;

    fn number_names(&self) -> &'static [&'static str] {
        &["lr", "momentum"]
    }

    fn numbers(&self) -> Vec<f64> {
        let wide = |x: T| x.to_f64().expect("an element converts to f64");
        vec![wide(self.lr), wide(self.momentum)]
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
        let [lr, momentum] = numbers else {
            return Err(format!("Sgd keeps 2 numbers, not {}", numbers.len()));
        };
        let (lr, momentum) = (exact("lr", *lr)?, exact("momentum", *momentum)?);
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
        (self.lr, self.momentum, self.velocity) = (lr, momentum, velocity);
        Ok(())
    }
}
