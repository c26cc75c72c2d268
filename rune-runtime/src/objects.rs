//! What the code generated for a `#[differentiable(dyn)]` trait needs at run time: the tangent
//! of a `Box<dyn Layer>`, which holds a layer of some type, read as that type, and its leaves
//! read as tensors of the trait's element type.

use std::any::{type_name, Any};

use crate::element::Element;
use crate::tensor::Tensor;

/// `tangent`, the tangent given for a boxed layer of type `L`, as an `L`.
///
/// # Panics
/// When the tangent holds another layer type (a tangent of one layer passed for another):
/// `method` names the trait's method.
#[track_caller]
pub fn object_tangent<'t, L: Any>(tangent: &'t dyn Any, method: &str) -> &'t L {
    tangent.downcast_ref::<L>().unwrap_or_else(|| {
        panic!(
            "{method}: the tangent of a boxed `{}` holds another type; a layer's tangent has the \
             layer's own type (make it with `zeros_like`, or from the same layer)",
            type_name::<L>()
        )
    })
}

/// The leaves of a boxed layer, whose type the box does not know, as tensors of the trait's
/// element type `E`.
///
/// # Panics
/// When the layer's leaves hold another element type: `layer` names the trait.
#[track_caller]
pub fn object_leaves<'a, E: Element, F: Element>(
    leaves: Vec<&'a Tensor<F>>,
    layer: &str,
) -> Vec<&'a Tensor<E>> {
    leaves
        .into_iter()
        .map(|leaf| {
            let leaf: &dyn Any = leaf;
            leaf.downcast_ref()
                .unwrap_or_else(|| element_mismatch::<E, F>(layer))
        })
        .collect()
}

/// [`object_leaves`], mutably.
///
/// # Panics
/// As [`object_leaves`].
#[track_caller]
pub fn object_leaves_mut<'a, E: Element, F: Element>(
    leaves: Vec<&'a mut Tensor<F>>,
    layer: &str,
) -> Vec<&'a mut Tensor<E>> {
    leaves
        .into_iter()
        .map(|leaf| {
            let leaf: &mut dyn Any = leaf;
            leaf.downcast_mut()
                .unwrap_or_else(|| element_mismatch::<E, F>(layer))
        })
        .collect()
}

#[track_caller]
fn element_mismatch<E: Element, F: Element>(layer: &str) -> ! {
    panic!(
        "a `Box<dyn {layer}>` holds a layer with `{}` leaves; the trait's tensors are `{}`",
        type_name::<F>(),
        type_name::<E>()
    )
}
