//! Layers as PyTorch's `torch.nn` has them, each a `#[derive(Differentiable)]` structure whose
//! `forward` is a `#[differentiable]` method, so each is also an example of how to write one.
//! Parameter names and layouts are PyTorch's (`Linear`'s `weight` is `[out, in]`), so a
//! `state_dict` saved as safetensors loads by name, and the initialisation is PyTorch's default
//! for the layer, drawn from an explicit, seeded [`Init`].
//!
//! ```
//! use rune_ad::nn::{Init, Linear, Mlp};
//! use rune_ad::prelude::*;
//!
//! let mut init = Init::new(0);
//! let layer = Linear::<f32>::new(3, 2, &mut init);
//! assert_eq!((layer.weight.shape(), layer.bias.shape()), (&[2, 3][..], &[2][..]));
//! let mlp = Mlp::<f64>::new(&[4, 8, 1], &mut init);
//! let x = Tensor::ones(&[5, 4]);
//! assert_eq!(mlp.forward(&x).shape(), &[5, 1]);
//! ```

mod attention;
mod batch;
mod init;
mod layers;
mod recurrent;
mod sequential;

pub use attention::MultiHeadAttention;
pub use batch::{BatchNorm, Dropout};
pub use init::Init;
pub use layers::{Embedding, LayerNorm, Linear, Mlp, RmsNorm};
pub use recurrent::{Conv2d, GruCell, LstmCell};
pub use sequential::{Activation, Module, Sequential};
