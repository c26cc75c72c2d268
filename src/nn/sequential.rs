//! `torch.nn.Sequential`: layers of several types in one list, each called on the output of the
//! one before, through the [`Module`] trait and `Box<dyn Module<T>>`.

use std::marker::PhantomData;

use super::{BatchNorm, Conv2d, LayerNorm, Linear, Mlp, RmsNorm};
use crate::{differentiable, stop_gradient, Detach, Differentiable, Element, Tensor};

/// A layer with one input and one output, as [`Sequential`] holds it. `#[differentiable(dyn)]`
/// makes `Box<dyn Module<T>>` a differentiable layer itself: its gradient is a box holding the
/// gradient of the layer inside (read it with `downcast_ref`).
///
/// Each layer of this module implements it with its own `forward`; a layer of a user's is one
/// more impl under `#[differentiable]`:
///
/// ```
/// use rune_ad::nn::Module;
/// use rune_ad::prelude::*;
///
/// #[derive(Clone, Differentiable)]
/// struct Scale {
///     s: Tensor<f32>,
/// }
///
/// #[differentiable]
/// impl Module<f32> for Scale {
///     fn forward(&self, x: &Tensor<f32>) -> Tensor<f32> {
///         x * &self.s
///     }
/// }
/// ```
#[differentiable(dyn)]
pub trait Module<T: Element> {
    /// The layer applied to `x`.
    fn forward(&self, x: &Tensor<T>) -> Tensor<T>;
}

/// An activation as a layer of a [`Sequential`] (`torch.nn.ReLU()`, ..): no parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Activation<T> {
    kind: Kind,
    elem: PhantomData<T>,
}

/// The activation functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Relu,
    Tanh,
    Sigmoid,
    Gelu,
    Silu,
}

/// A constant in the differentiated `forward` (read with `stop_gradient`).
impl Detach for Kind {
    fn detach(&self) -> Self {
        *self
    }
}

impl<T: Element> Activation<T> {
    fn of(kind: Kind) -> Self {
        Activation {
            kind,
            elem: PhantomData,
        }
    }

    /// `torch.nn.ReLU()`: `max(x, 0)`.
    pub fn relu() -> Self {
        Self::of(Kind::Relu)
    }

    /// `torch.nn.Tanh()`.
    pub fn tanh() -> Self {
        Self::of(Kind::Tanh)
    }

    /// `torch.nn.Sigmoid()`.
    pub fn sigmoid() -> Self {
        Self::of(Kind::Sigmoid)
    }

    /// `torch.nn.GELU()`: the exact form, `x Φ(x)`.
    pub fn gelu() -> Self {
        Self::of(Kind::Gelu)
    }

    /// `torch.nn.SiLU()`: `x sigmoid(x)`.
    pub fn silu() -> Self {
        Self::of(Kind::Silu)
    }
}

/// No leaves: an activation's gradient and tangent are the activation itself.
impl<T: Element> Differentiable for Activation<T> {
    type Elem = T;

    fn zeros_like(&self) -> Self {
        *self
    }

    fn leaves(&self) -> Vec<&Tensor<T>> {
        Vec::new()
    }

    fn leaves_mut(&mut self) -> Vec<&mut Tensor<T>> {
        Vec::new()
    }

    fn leaf_paths(&self, _prefix: &str) -> Vec<String> {
        Vec::new()
    }
}

#[differentiable]
impl<T: Element> Module<T> for Activation<T> {
    fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        match stop_gradient(&self.kind) {
            Kind::Relu => x.relu(),
            Kind::Tanh => x.tanh(),
            Kind::Sigmoid => x.sigmoid(),
            Kind::Gelu => x.gelu(),
            Kind::Silu => x.silu(),
        }
    }
}

/// `torch.nn.Sequential`: the layers in turn. It is a [`Module`] itself, so sequences nest.
///
/// ```
/// use rune_ad::nn::{Activation, Init, LayerNorm, Linear, Sequential};
/// use rune_ad::prelude::*;
///
/// let mut init = Init::new(0);
/// let model = Sequential::new()
///     .push(Linear::<f32>::new(4, 8, &mut init))
///     .push(Activation::relu())
///     .push(LayerNorm::new(8))
///     .push(Linear::new(8, 1, &mut init));
/// let x = Tensor::ones(&[5, 4]);
/// assert_eq!(model.forward(&x).shape(), &[5, 1]);
/// ```
#[derive(Clone, Differentiable)]
pub struct Sequential<T: Element> {
    /// The layers, first to last.
    pub layers: Vec<Box<dyn Module<T>>>,
}

impl<T: Element> Sequential<T> {
    /// No layers: the identity.
    pub fn new() -> Self {
        Sequential { layers: Vec::new() }
    }

    /// The sequence with `layer` appended.
    #[must_use]
    pub fn push<L: Module<T> + Differentiable + 'static>(mut self, layer: L) -> Self {
        self.layers.push(Box::new(layer));
        self
    }
}

impl<T: Element> Default for Sequential<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[differentiable]
impl<T: Element> Sequential<T> {
    /// Each layer applied to the output of the one before.
    pub fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        let mut h = x.clone();
        for layer in &self.layers {
            h = layer.forward(&h);
        }
        h
    }
}

/// Each layer's [`Module`] impl calls its own `forward`.
macro_rules! modules {
    ($($layer:ident),*) => {$(
        #[differentiable]
        impl<T: Element> Module<T> for $layer<T> {
            fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
                self.forward(x)
            }
        }
    )*};
}

modules!(Sequential, Linear, LayerNorm, RmsNorm, Mlp, Conv2d, BatchNorm);
