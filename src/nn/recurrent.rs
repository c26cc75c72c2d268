//! Convolution and recurrent cells, in PyTorch's layouts.

use super::Init;
use crate::{differentiable, stop_gradient, Differentiable, Element, Tensor};

/// `torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding)` on NCHW images:
/// `weight` `[out, in, k, k]`, `bias` `[out]`, both uniform on `±1/√(in·k·k)` at first.
#[derive(Clone, Debug, Differentiable)]
pub struct Conv2d<T: Element> {
    /// `[out_channels, in_channels, k, k]`.
    pub weight: Tensor<T>,
    /// `[out_channels]`.
    pub bias: Tensor<T>,
    /// The step between windows.
    #[nodiff]
    pub stride: usize,
    /// Zeros added on each side.
    #[nodiff]
    pub padding: usize,
}

/// `torch.nn.LSTMCell(input_size, hidden_size)`: gates `i, f, g, o` stacked in that order in
/// `weight_ih` `[4h, in]`, `weight_hh` `[4h, h]`, `bias_ih` and `bias_hh` `[4h]`, all uniform
/// on `±1/√h` at first.
#[derive(Clone, Debug, Differentiable)]
pub struct LstmCell<T: Element> {
    /// `[4·hidden, input]`.
    pub weight_ih: Tensor<T>,
    /// `[4·hidden, hidden]`.
    pub weight_hh: Tensor<T>,
    /// `[4·hidden]`.
    pub bias_ih: Tensor<T>,
    /// `[4·hidden]`.
    pub bias_hh: Tensor<T>,
}

/// `torch.nn.GRUCell(input_size, hidden_size)`: gates `r, z, n` stacked in that order in
/// `weight_ih` `[3h, in]`, `weight_hh` `[3h, h]`, `bias_ih` and `bias_hh` `[3h]`, all uniform
/// on `±1/√h` at first.
#[derive(Clone, Debug, Differentiable)]
pub struct GruCell<T: Element> {
    /// `[3·hidden, input]`.
    pub weight_ih: Tensor<T>,
    /// `[3·hidden, hidden]`.
    pub weight_hh: Tensor<T>,
    /// `[3·hidden]`.
    pub bias_ih: Tensor<T>,
    /// `[3·hidden]`.
    pub bias_hh: Tensor<T>,
}

impl<T: Element> Conv2d<T> {
    /// A convolution with a square `kernel`, initialised as PyTorch's.
    pub fn new(
        inputs: usize,
        outputs: usize,
        kernel: usize,
        stride: usize,
        padding: usize,
        init: &mut Init,
    ) -> Self {
        let fan_in = inputs * kernel * kernel;
        Conv2d {
            weight: init.fan_in(&[outputs, inputs, kernel, kernel], fan_in),
            bias: init.fan_in(&[outputs], fan_in),
            stride,
            padding,
        }
    }
}

impl<T: Element> LstmCell<T> {
    /// A cell from `inputs` features to `hidden` units, initialised as PyTorch's.
    pub fn new(inputs: usize, hidden: usize, init: &mut Init) -> Self {
        LstmCell {
            weight_ih: init.fan_in(&[4 * hidden, inputs], hidden),
            weight_hh: init.fan_in(&[4 * hidden, hidden], hidden),
            bias_ih: init.fan_in(&[4 * hidden], hidden),
            bias_hh: init.fan_in(&[4 * hidden], hidden),
        }
    }
}

impl<T: Element> GruCell<T> {
    /// A cell from `inputs` features to `hidden` units, initialised as PyTorch's.
    pub fn new(inputs: usize, hidden: usize, init: &mut Init) -> Self {
        GruCell {
            weight_ih: init.fan_in(&[3 * hidden, inputs], hidden),
            weight_hh: init.fan_in(&[3 * hidden, hidden], hidden),
            bias_ih: init.fan_in(&[3 * hidden], hidden),
            bias_hh: init.fan_in(&[3 * hidden], hidden),
        }
    }
}

#[differentiable]
impl<T: Element> Conv2d<T> {
    /// The convolution of an `[N, in, H, W]` batch, plus the bias of each output channel.
    pub fn forward(&self, x: &Tensor<T>) -> Tensor<T> {
        let (stride, padding) = (stop_gradient(&self.stride), stop_gradient(&self.padding));
        let channels = self.bias.len();
        x.conv2d(&self.weight, stride, padding) + self.bias.reshape(&[1, channels, 1, 1])
    }
}

#[differentiable]
impl<T: Element> LstmCell<T> {
    /// One step on a batch `x` `[N, input]` from the state `h`, `c` `[N, hidden]`: the new
    /// `(h, c)`.
    pub fn forward(&self, x: &Tensor<T>, h: &Tensor<T>, c: &Tensor<T>) -> (Tensor<T>, Tensor<T>) {
        let (n, k) = (x.shape()[0], self.weight_hh.shape()[1]);
        let gates = x.matmul(&self.weight_ih.t())
            + &self.bias_ih
            + h.matmul(&self.weight_hh.t())
            + &self.bias_hh;
        let i = gates.shrink(&[(0, n), (0, k)]).sigmoid();
        let f = gates.shrink(&[(0, n), (k, 2 * k)]).sigmoid();
        let g = gates.shrink(&[(0, n), (2 * k, 3 * k)]).tanh();
        let o = gates.shrink(&[(0, n), (3 * k, 4 * k)]).sigmoid();
        let c_next = f * c + i * g;
        let h_next = o * c_next.tanh();
        (h_next, c_next)
    }
}

#[differentiable]
impl<T: Element> GruCell<T> {
    /// One step on a batch `x` `[N, input]` from the state `h` `[N, hidden]`: the new `h`.
    pub fn forward(&self, x: &Tensor<T>, h: &Tensor<T>) -> Tensor<T> {
        let (n, k) = (x.shape()[0], self.weight_hh.shape()[1]);
        let gi = x.matmul(&self.weight_ih.t()) + &self.bias_ih;
        let gh = h.matmul(&self.weight_hh.t()) + &self.bias_hh;
        let r = (gi.shrink(&[(0, n), (0, k)]) + gh.shrink(&[(0, n), (0, k)])).sigmoid();
        let z = (gi.shrink(&[(0, n), (k, 2 * k)]) + gh.shrink(&[(0, n), (k, 2 * k)])).sigmoid();
        let candidate = (gi.shrink(&[(0, n), (2 * k, 3 * k)])
            + r * gh.shrink(&[(0, n), (2 * k, 3 * k)]))
        .tanh();
        (-&z + T::one()) * candidate + z * h
    }
}
