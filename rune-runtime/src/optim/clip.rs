//! Gradient clipping over any [`Differentiable`] gradient, as `torch.nn.utils.clip_grad_norm_`
//! and `clip_grad_value_`.

use ndarray::Zip;
use num_traits::{Float, One, Zero};

use crate::element::Element;
use crate::model::Differentiable;

/// Scales `grads` so that their global norm (the 2-norm of every element of every leaf) is at
/// most `max_norm`, and returns the norm before clipping, as `torch.nn.utils.clip_grad_norm_`:
/// the scale is `max_norm / (norm + 1e-6)` where that is below one, and nothing changes
/// otherwise.
///
/// ```
/// use rune_runtime::optim::clip_grad_norm;
/// use rune_runtime::Tensor;
///
/// let mut g = vec![Tensor::from_vec(vec![3.0_f64], &[1]), Tensor::from_vec(vec![4.0], &[1])];
/// let norm = clip_grad_norm(&mut g, 1.0);
/// assert_eq!(norm, 5.0);
/// let scale = 1.0 / (5.0 + 1e-6);
/// assert_eq!(g[0].to_vec(), vec![3.0 * scale]);
/// ```
///
/// # Panics
/// When `max_norm` is negative or NaN.
#[track_caller]
pub fn clip_grad_norm<D: Differentiable>(grads: &mut D, max_norm: D::Elem) -> D::Elem {
    assert!(
        max_norm >= D::Elem::zero(),
        "clip_grad_norm: `max_norm` is {max_norm:?}; it must be a non-negative number"
    );
    let squares = grads
        .leaves()
        .iter()
        .map(|leaf| leaf.view().fold(D::Elem::zero(), |acc, &x| acc + x * x))
        .fold(D::Elem::zero(), |acc, s| acc + s);
    let norm = squares.sqrt();
    let scale = max_norm / (norm + D::Elem::from_f64(1e-6));
    if scale < D::Elem::one() {
        for leaf in grads.leaves_mut() {
            *leaf *= scale;
        }
    }
    norm
}

/// Clamps every element of `grads` to `[−clip, clip]`, as `torch.nn.utils.clip_grad_value_`.
///
/// # Panics
/// When `clip` is negative or NaN.
#[track_caller]
pub fn clip_grad_value<D: Differentiable>(grads: &mut D, clip: D::Elem) {
    assert!(
        clip >= D::Elem::zero(),
        "clip_grad_value: `clip` is {clip:?}; it must be a non-negative number"
    );
    for leaf in grads.leaves_mut() {
        Zip::from(leaf.data_mut()).for_each(|x| {
            if *x > clip {
                *x = clip;
            } else if *x < -clip {
                *x = -clip;
            }
        });
    }
}
