//! Convolution on NCHW tensors.
//!
//! `conv2d` is cross-correlation as PyTorch's `F.conv2d` (OIHW weight, no bias, zero padding
//! on all four sides), computed per image as one GEMM of the weight matrix `[O, C·KH·KW]` with
//! the image's patch matrix `[C·KH·KW, OH·OW]` (im2col); its rules are GEMMs with transposed
//! views and the adjoint of im2col.

use ndarray::ArrayView2;

use crate::element::Element;
use crate::error::{checked, checked_size, panicking_twin, OrPanic, ShapeError};
use crate::ops::linalg::{gemm, is_all_zero};
use crate::ops::window::{Misfit, Window};
use crate::tensor::Tensor;

/// The geometry of `conv2d`: the window of the weight's kernel over the input, and the
/// number of output channels.
#[derive(Clone, Copy, Debug)]
struct ConvDims {
    win: Window,
    o: usize,
}

impl ConvDims {
    fn new<T>(x: &[usize], w: &[usize], stride: usize, pad: usize) -> Result<Self, ShapeError> {
        let err = |msg: String| Err(ShapeError::new("conv2d", msg));
        let (&[n, c, h, width], &[o, wc, kh, kw]) = (x, w) else {
            return err(format!(
                "input {x:?} must be NCHW and weight {w:?} OIHW (4 axes each)"
            ));
        };
        if c != wc {
            return err(format!(
                "input {x:?} has {c} channels but weight {w:?} expects {wc}"
            ));
        }
        if stride == 0 {
            return err(format!(
                "stride must be positive (input {x:?}, weight {w:?})"
            ));
        }
        let win = Window::new(
            "conv2d",
            [n, c, h, width],
            (kh, kw),
            stride,
            1,
            pad,
            |misfit| match misfit {
                // With dilation 1 a kernel spans its own size: this one does not overflow.
                Misfit::Span => format!("the span of kernel {kh}x{kw} of weight {w:?}"),
                Misfit::Padded => format!("input {x:?} padded by {pad} (size+2*padding)"),
                Misfit::TooLarge {
                    padded: (ph, pw), ..
                } => format!(
                    "kernel {kh}x{kw} of weight {w:?} is larger than input {x:?} padded by {pad} \
                     ({ph}x{pw})"
                ),
            },
        )?;
        let geometry = || format!("input {x:?}, weight {w:?}, stride {stride}, padding {pad}");
        let (oh, ow) = (win.oh, win.ow);
        // The output, one image's patch matrix [C*KH*KW, OH*OW] and the [O, C*KH*KW] view of
        // the weight must each fit in a tensor.
        checked_size::<T>("conv2d", &win.out_shape(o), || {
            format!("the output of {}", geometry())
        })?;
        let patch = checked(
            "conv2d",
            c.checked_mul(kh).and_then(|p| p.checked_mul(kw)),
            || format!("the C*KH*KW patch rows of {}", geometry()),
        )?;
        let spots = checked("conv2d", oh.checked_mul(ow), || {
            format!("the OH*OW = {oh}*{ow} output positions of {}", geometry())
        })?;
        checked_size::<T>("conv2d", &[patch, spots], || {
            format!("the patch matrix of {}", geometry())
        })?;
        Ok(ConvDims { win, o })
    }

    fn y_shape(&self) -> [usize; 4] {
        self.win.out_shape(self.o)
    }

    /// A 1x1 kernel with stride 1 and no padding: the image is its own patch matrix.
    fn pointwise(&self) -> bool {
        let d = &self.win;
        d.kh == 1 && d.kw == 1 && d.stride == 1 && d.padding == 0
    }

    /// Panics unless `t` has `expected` shape.
    #[track_caller]
    fn check(&self, what: &str, t: &Tensor<impl Element>, expected: &[usize]) {
        if t.shape() != expected {
            let d = &self.win;
            panic!(
                "conv2d: {what} has shape {:?}, expected {expected:?} (input {:?}, weight {:?}, \
                 stride {}, padding {})",
                t.shape(),
                d.x_shape(),
                [self.o, d.c, d.kh, d.kw],
                d.stride,
                d.padding
            );
        }
    }

    /// The patch matrix of one image: the image itself for a pointwise kernel, else `cols`
    /// filled by im2col.
    fn patches<'a, T: Element>(&self, img: &'a [T], cols: &'a mut [T]) -> ArrayView2<'a, T> {
        let data: &'a [T] = if self.pointwise() {
            img
        } else {
            self.win.im2col(img, cols);
            cols
        };
        ArrayView2::from_shape((self.win.patch(), self.win.positions()), data)
            .expect("conv2d: the patch matrix holds C*KH*KW x OH*OW elements")
    }

    /// A scratch patch matrix (empty when the image serves as its own).
    fn scratch<T: Element>(&self) -> Vec<T> {
        if self.pointwise() {
            Vec::new()
        } else {
            vec![T::zero(); self.win.patch() * self.win.positions()]
        }
    }

    /// `out (+)= conv2d(x, w)`, `out` in row-major NCHW order.
    fn forward_into<T: Element>(
        &self,
        x: &Tensor<T>,
        w: &Tensor<T>,
        out: &mut [T],
        accumulate: bool,
    ) {
        let xs = x.standard_layout();
        let xs = xs.as_slice().expect("standard layout is contiguous");
        let ws = w.standard_layout();
        let w2 = ws
            .view()
            .into_shape_with_order((self.o, self.win.patch()))
            .expect("conv2d: the weight reshapes to [O, C*KH*KW]");
        let (img, per) = (self.win.image(), self.o * self.win.positions());
        let mut cols = self.scratch();
        for i in 0..self.win.n {
            let p = self.patches(&xs[i * img..(i + 1) * img], &mut cols);
            gemm(&w2, &p, &mut out[i * per..(i + 1) * per], accumulate);
        }
    }
}

impl<T: Element> Tensor<T> {
    panicking_twin! {
        /// 2-D cross-correlation of an NCHW input with an OIHW weight, as PyTorch's `F.conv2d`
        /// without bias: output `[N, O, OH, OW]` with `OH = (H + 2·padding − KH) / stride + 1`
        /// (rounded down), likewise `OW`; `padding` zeros on all four sides.
        ///
        /// # Panics
        /// When an operand is not 4-D, the channels differ, `stride` is 0, or the kernel is larger
        /// than the padded image; the message names the shapes. [`Tensor::try_conv2d`] returns the
        /// error instead.
        pub fn conv2d(&self, w: &Tensor<T>, stride: usize, padding: usize) -> Tensor<T>
            => self.try_conv2d
    }

    /// Like [`Tensor::conv2d`], returning a [`ShapeError`] naming the shapes when they do not
    /// fit.
    pub fn try_conv2d(
        &self,
        w: &Tensor<T>,
        stride: usize,
        padding: usize,
    ) -> Result<Tensor<T>, ShapeError> {
        let d = ConvDims::new::<T>(self.shape(), w.shape(), stride, padding)?;
        let y_shape = d.y_shape();
        let mut out = vec![T::zero(); y_shape.iter().product()];
        d.forward_into(self, w, &mut out, false);
        Ok(Tensor::from_vec(out, &y_shape))
    }
}

// ---- rules ----------------------------------------------------------------------------------
//
// | op     | JVP                       | VJP                                         |
// |--------|---------------------------|---------------------------------------------|
// | conv2d | conv(dx, w) + conv(x, dw) | input: col2im(wᵀ · g); weight: Σₙ g · colsᵀ |
//
// With stride 1, a square kernel padded by less than its size and at least 8 input channels,
// the input's VJP is computed as the convolution of `g` with the flipped kernel instead (see
// `transposed_as_convolution`).

/// Rules of convolution (see the module's table).
pub mod rules {
    use super::*;

    /// JVP of `x.conv2d(w, stride, padding)`: `conv2d(dx, w) + conv2d(x, dw)` (an absent or
    /// all-zero tangent adds nothing).
    ///
    /// # Panics
    /// When the shapes do not fit, as `conv2d` would, or a tangent's shape differs from its
    /// operand's.
    #[track_caller]
    pub fn conv2d_jvp<T: Element>(
        x: &Tensor<T>,
        w: &Tensor<T>,
        stride: usize,
        padding: usize,
        dx: Option<&Tensor<T>>,
        dw: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        let d = ConvDims::new::<T>(x.shape(), w.shape(), stride, padding).or_panic();
        let y_shape = d.y_shape();
        let mut out = vec![T::zero(); y_shape.iter().product()];
        let mut written = false;
        if let Some(dx) = dx.filter(|t| !is_all_zero(t)) {
            d.check("the input's tangent", dx, x.shape());
            d.forward_into(dx, w, &mut out, false);
            written = true;
        }
        if let Some(dw) = dw.filter(|t| !is_all_zero(t)) {
            d.check("the weight's tangent", dw, w.shape());
            d.forward_into(x, dw, &mut out, written);
        }
        Tensor::from_vec(out, &y_shape)
    }

    /// VJP of `x.conv2d(w, stride, padding)` for the input `x` (of shape `x_shape`): per image,
    /// the adjoint of im2col applied to `wᵀ · g`.
    ///
    /// # Panics
    /// When the shapes do not fit, or `g` does not have the output's shape.
    #[track_caller]
    pub fn conv2d_vjp_input<T: Element>(
        g: &Tensor<T>,
        x_shape: &[usize],
        w: &Tensor<T>,
        stride: usize,
        padding: usize,
    ) -> Tensor<T> {
        let d = ConvDims::new::<T>(x_shape, w.shape(), stride, padding).or_panic();
        d.check("the cotangent", g, &d.y_shape());
        if is_all_zero(g) {
            return Tensor::zeros(x_shape);
        }
        if let Some(gx) = transposed_as_convolution(&d, g, w) {
            return gx;
        }
        let gs = g.standard_layout();
        let gs = gs.as_slice().expect("standard layout is contiguous");
        let ws = w.standard_layout();
        let wt = ws
            .view()
            .into_shape_with_order((d.o, d.win.patch()))
            .expect("conv2d: the weight reshapes to [O, C*KH*KW]")
            .reversed_axes();
        let (img, per) = (d.win.image(), d.o * d.win.positions());
        let mut gx = vec![T::zero(); d.win.n * img];
        let mut cols = d.scratch();
        for i in 0..d.win.n {
            let gi = ArrayView2::from_shape((d.o, d.win.positions()), &gs[i * per..(i + 1) * per])
                .expect("conv2d: the cotangent of one image is [O, OH*OW]");
            let gxi = &mut gx[i * img..(i + 1) * img];
            if d.pointwise() {
                gemm(&wt, &gi, gxi, false);
            } else {
                gemm(&wt, &gi, &mut cols, false);
                d.win.col2im_add(&cols, gxi);
            }
        }
        Tensor::from_vec(gx, x_shape)
    }

    /// The fewest input channels for which [`transposed_as_convolution`] is used.
    const MIN_FLIPPED_ROWS: usize = 8;

    /// The input's cotangent of a convolution with stride 1 and a square kernel padded by less
    /// than its size, as the convolution of `g` with the flipped kernel (the weight's channel
    /// axes swapped, its taps reversed) padded by `KH - 1 - padding`: an im2col of `g` and a
    /// GEMM per image, where the general rule adds each patch matrix back into the image
    /// element by element (col2im). `None` for other geometries.
    fn transposed_as_convolution<T: Element>(
        d: &ConvDims,
        g: &Tensor<T>,
        w: &Tensor<T>,
    ) -> Option<Tensor<T>> {
        let win = &d.win;
        let k = win.kh;
        // With few input channels the flipped kernel's GEMM has as few rows, too few to run
        // at speed (RGB images: 3), and the general rule's GEMM of `C·KH·KW` rows is faster
        // despite its col2im.
        if win.stride != 1 || win.kw != k || win.padding >= k || win.c < MIN_FLIPPED_ROWS {
            return None;
        }
        let (o, c) = (d.o, win.c);
        let ws = w.standard_layout();
        let ws = ws.as_slice().expect("standard layout is contiguous");
        let taps = k * k;
        let mut flipped = vec![T::zero(); c * o * taps];
        for (oc, kernel) in ws.chunks_exact(taps).enumerate() {
            let (oi, ci) = (oc / c, oc % c);
            let dst = &mut flipped[(ci * o + oi) * taps..][..taps];
            for (dst, &v) in dst.iter_mut().zip(kernel.iter().rev()) {
                *dst = v;
            }
        }
        let wf = Tensor::from_vec(flipped, &[c, o, k, k]);
        let back = ConvDims::new::<T>(g.shape(), wf.shape(), 1, k - 1 - win.padding).ok()?;
        let shape = back.y_shape();
        debug_assert_eq!(
            shape,
            win.x_shape(),
            "conv2d: the transposed convolution's shape"
        );
        let mut gx = vec![T::zero(); shape.iter().product()];
        back.forward_into(g, &wf, &mut gx, false);
        Some(Tensor::from_vec(gx, &shape))
    }

    /// VJP of `x.conv2d(w, stride, padding)` for the weight `w` (of shape `w_shape`):
    /// `Σ over images of g · colsᵀ`, accumulated in the GEMM.
    ///
    /// # Panics
    /// When the shapes do not fit, or `g` does not have the output's shape.
    #[track_caller]
    pub fn conv2d_vjp_weight<T: Element>(
        g: &Tensor<T>,
        x: &Tensor<T>,
        w_shape: &[usize],
        stride: usize,
        padding: usize,
    ) -> Tensor<T> {
        let d = ConvDims::new::<T>(x.shape(), w_shape, stride, padding).or_panic();
        d.check("the cotangent", g, &d.y_shape());
        if is_all_zero(g) {
            return Tensor::zeros(w_shape);
        }
        let gs = g.standard_layout();
        let gs = gs.as_slice().expect("standard layout is contiguous");
        let xs = x.standard_layout();
        let xs = xs.as_slice().expect("standard layout is contiguous");
        let (img, per) = (d.win.image(), d.o * d.win.positions());
        let mut gw = vec![T::zero(); d.o * d.win.patch()];
        let mut cols = d.scratch();
        for i in 0..d.win.n {
            let gi = ArrayView2::from_shape((d.o, d.win.positions()), &gs[i * per..(i + 1) * per])
                .expect("conv2d: the cotangent of one image is [O, OH*OW]");
            let p = d.patches(&xs[i * img..(i + 1) * img], &mut cols);
            gemm(&gi, &p.reversed_axes(), &mut gw, i > 0);
        }
        Tensor::from_vec(gw, w_shape)
    }
}
