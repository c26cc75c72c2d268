//! Slicing ops: `shrink`, `pad`, `flip`, and the sliding-window pair `unfold` / `fold`.
//!
//! `shrink` and `flip` return views of the same storage (no copy), except that a small part
//! of a larger tensor that is not contiguous in it (a row of weights cut across a packed
//! matrix) is copied out row-major: every op that reads it then reads a slice, where a view
//! would be copied again by each reader, at every step of a loop that reads it. `pad` of the
//! first axis of a large row-major tensor leaves its result unwritten (`tensor/padded.rs`:
//! fused regions read it in place, `shrink` of its inside is the input again); any other
//! `pad`, `unfold` and `fold` write new row-major tensors. `unfold` is im2col exactly as
//! PyTorch's `F.unfold` with a square kernel, and `fold` its adjoint (`F.fold`): windows that
//! overlap sum.

use arrayvec::ArrayVec;
use ndarray::{ArrayD, Axis, IxDyn, Slice};

use crate::copy::{copy_elems, extend_elems};
use crate::element::Element;
use crate::error::{checked, checked_size, panicking_twin, ShapeError};
use crate::ops::window::{Misfit, Window};
use crate::tensor::{small, Tensor, LAZY_PAD};

/// Checks that `ranges` gives one entry per axis of `shape`.
fn check_rank(
    op: &'static str,
    ranges: &[(usize, usize)],
    shape: &[usize],
) -> Result<(), ShapeError> {
    if ranges.len() != shape.len() {
        return Err(ShapeError::new(
            op,
            format!(
                "{} ranges {ranges:?} given for shape {shape:?}, which has {} axes",
                ranges.len(),
                shape.len()
            ),
        ));
    }
    Ok(())
}

/// The most elements of a non-contiguous part that `shrink` copies out (see the module's doc).
const SMALL_PART: usize = 256;

impl<T: Clone> Tensor<T> {
    panicking_twin! {
        /// The sub-tensor `ranges[i].0..ranges[i].1` along every axis `i` (a view, or a copy of
        /// a small part that is not contiguous).
        ///
        /// # Panics
        /// When `ranges` does not have one range per axis, or a range is reversed or runs past its
        /// axis.
        pub fn shrink(&self, ranges: &[(usize, usize)]) -> Tensor<T> => self.try_shrink
    }

    /// Like [`Tensor::shrink`], returning an error for bad ranges.
    pub fn try_shrink(&self, ranges: &[(usize, usize)]) -> Result<Tensor<T>, ShapeError> {
        let shape = self.shape();
        check_rank("shrink", ranges, shape)?;
        for (axis, (&(start, end), &len)) in ranges.iter().zip(shape).enumerate() {
            if start > end || end > len {
                return Err(ShapeError::new(
                    "shrink",
                    format!(
                        "range {start}..{end} is out of bounds for axis {axis} (length {len}) \
                         of shape {shape:?}"
                    ),
                ));
            }
        }
        let keeps = ranges.first().is_some_and(|&r| r == (0, shape[0]));
        if let Some(t) = self.per_example(keeps, |e| e.try_shrink(&ranges[1..])) {
            return t;
        }
        if let Some(t) = small::shrink(self, ranges) {
            return Ok(t);
        }
        if let Some(t) = self.unpadded(ranges) {
            return Ok(t);
        }
        if self.repeated_parts().is_some() {
            // A repeated tensor (`vmap`) is copied out only where it is cut, not whole.
            let view = self.view();
            let part = view.slice_each_axis(|ad| {
                let (start, end) = ranges[ad.axis.index()];
                Slice::from(start..end)
            });
            return Ok(Tensor::from_shared(part.to_owned().into_shared()));
        }
        let mut data = self.to_shared();
        data.slice_each_axis_inplace(|ad| {
            let (start, end) = ranges[ad.axis.index()];
            Slice::from(start..end)
        });
        if data.len() <= SMALL_PART && !data.is_standard_layout() {
            let shape = data.shape().to_vec();
            return Ok(Tensor::from_vec(data.iter().cloned().collect(), &shape));
        }
        Ok(Tensor::from_shared(data))
    }

    panicking_twin! {
        /// The tensor with `ranges[i].0` elements of `fill` added before and `ranges[i].1` after it
        /// along every axis `i`.
        ///
        /// # Panics
        /// When `ranges` does not have one pair per axis.
        pub fn pad(&self, ranges: &[(usize, usize)], fill: T) -> Tensor<T> => self.try_pad
    }

    /// Like [`Tensor::pad`], returning an error when `ranges` has the wrong length or the padded
    /// shape is more than a tensor can hold.
    pub fn try_pad(&self, ranges: &[(usize, usize)], fill: T) -> Result<Tensor<T>, ShapeError> {
        let shape = self.shape();
        check_rank("pad", ranges, shape)?;
        let keeps = ranges.first() == Some(&(0, 0));
        if let Some(t) = self.per_example(keeps, |e| e.try_pad(&ranges[1..], fill.clone())) {
            return t;
        }
        if let Some(t) = small::pad(self, ranges, &fill) {
            return Ok(t);
        }
        let padded = shape
            .iter()
            .zip(ranges)
            .enumerate()
            .map(|(axis, (&len, &(before, after)))| {
                checked(
                    "pad",
                    before.checked_add(len).and_then(|l| l.checked_add(after)),
                    || {
                        format!(
                            "padding ({before}, {after}) of axis {axis} (length {len}) of shape \
                             {shape:?}"
                        )
                    },
                )
            })
            .collect::<Result<Vec<usize>, _>>()?;
        checked_size::<T>("pad", &padded, || {
            format!("padding {ranges:?} of shape {shape:?}")
        })?;
        // Padding of the first axis alone around row-major elements is three runs: written
        // once each, where filling everything first writes the inside twice.
        let first_axis_only = ranges.iter().skip(1).all(|&r| r == (0, 0));
        if let (true, Some(data), Some(&(before, after))) =
            (first_axis_only, self.as_slice(), ranges.first())
        {
            let row: usize = shape[1..].iter().product();
            let len: usize = padded.iter().product();
            if len >= LAZY_PAD && before + after > 0 && !self.is_inline() {
                // Written out only if something other than a fused region reads it.
                return Ok(Tensor::padded(
                    self,
                    before * row,
                    after * row,
                    fill,
                    &padded,
                ));
            }
            let mut out = Vec::with_capacity(len);
            out.resize(before * row, fill.clone());
            extend_elems(&mut out, data);
            out.resize(out.len() + after * row, fill);
            return Ok(Tensor::from_parts(out, &padded));
        }
        if let (false, Some(data)) = (shape.is_empty(), self.as_slice()) {
            return Ok(Tensor::from_parts(
                pad_rows(data, shape, ranges, &padded, fill),
                &padded,
            ));
        }
        let mut out = ArrayD::from_elem(IxDyn(&padded), fill);
        out.slice_each_axis_mut(|ad| {
            let i = ad.axis.index();
            let before = ranges[i].0;
            Slice::from(before..before + shape[i])
        })
        .assign(&self.view());
        Ok(Tensor::from_array(out))
    }

    panicking_twin! {
        /// The tensor reversed along each of `axes` (a view).
        ///
        /// # Panics
        /// When an axis is out of range or repeated.
        pub fn flip(&self, axes: &[usize]) -> Tensor<T> => self.try_flip
    }

    /// Like [`Tensor::flip`], returning an error for a bad axis.
    pub fn try_flip(&self, axes: &[usize]) -> Result<Tensor<T>, ShapeError> {
        let n = self.ndim();
        let mut seen = vec![false; n];
        for &a in axes {
            if a >= n || std::mem::replace(&mut seen[a], true) {
                return Err(ShapeError::new(
                    "flip",
                    format!(
                        "axes {axes:?} are out of range or repeat an axis of shape {:?}",
                        self.shape()
                    ),
                ));
            }
        }
        let mut data = self.to_shared();
        for &a in axes {
            data.invert_axis(Axis(a));
        }
        Ok(Tensor::from_shared(data))
    }
}

/// Row-major `data` of `shape` (one axis or more) padded by `ranges` to `padded`: the fill
/// everywhere, then each run along the last axis copied to its place.
fn pad_rows<T: Clone>(
    data: &[T],
    shape: &[usize],
    ranges: &[(usize, usize)],
    padded: &[usize],
    fill: T,
) -> Vec<T> {
    let mut out = vec![fill; padded.iter().product()];
    let last = shape.len() - 1;
    let run = shape[last];
    if run == 0 || data.is_empty() {
        return out;
    }
    // Row-major strides of the output, and the output offset of the input's first element.
    let mut strides = vec![1usize; padded.len()];
    for a in (0..last).rev() {
        strides[a] = strides[a + 1] * padded[a + 1];
    }
    let origin: usize = ranges.iter().zip(&strides).map(|(r, s)| r.0 * s).sum();
    let mut index = vec![0usize; last];
    for src in data.chunks_exact(run) {
        let at = origin
            + index
                .iter()
                .zip(&strides)
                .map(|(i, s)| i * s)
                .sum::<usize>();
        copy_elems(&mut out[at..at + run], src);
        // The next run's index over the leading axes, last fastest.
        for a in (0..last).rev() {
            index[a] += 1;
            if index[a] < shape[a] {
                break;
            }
            index[a] = 0;
        }
    }
    out
}

/// The window of `unfold` and `fold` (`op`): a square `k x k` kernel over `[N, C, H, W]`, with
/// the checks and wording the two share.
fn unfold_window(
    op: &'static str,
    x: [usize; 4],
    k: usize,
    stride: usize,
    dilation: usize,
    padding: usize,
) -> Result<Window, ShapeError> {
    if k == 0 || stride == 0 || dilation == 0 {
        return Err(ShapeError::new(
            op,
            format!("kernel ({k}), stride ({stride}) and dilation ({dilation}) must be at least 1"),
        ));
    }
    let [_, _, h, w] = x;
    let geometry = || {
        format!(
            "kernel {k}, stride {stride}, dilation {dilation} and padding {padding} on \
             spatial size {h}x{w}"
        )
    };
    let g = Window::new(
        op,
        x,
        (k, k),
        stride,
        dilation,
        padding,
        |misfit| match misfit {
            Misfit::Span => format!("the window span dilation*(kernel-1)+1 of {}", geometry()),
            Misfit::Padded => format!("the padded size size+2*padding of {}", geometry()),
            Misfit::TooLarge {
                span: (span, _),
                padded: (ph, pw),
            } => format!(
                "a kernel of {k} with dilation {dilation} spans {span} positions, more than the \
                 padded spatial size {ph}x{pw} (size {h}x{w}, padding {padding})"
            ),
        },
    )?;
    checked(op, g.oh.checked_mul(g.ow), || {
        format!("the {}x{} window positions of {}", g.oh, g.ow, geometry())
    })?;
    Ok(g)
}

impl<T: Element> Tensor<T> {
    panicking_twin! {
        /// im2col on an NCHW tensor, as PyTorch's `F.unfold` with a square `kernel`:
        /// `[N, C, H, W]` → `[N, C*kernel*kernel, L]`.
        ///
        /// Row `c*kernel*kernel + ki*kernel + kj` of the result holds, for each of the `L` window
        /// positions (row-major over the `out_h x out_w` output grid), the input element
        /// `x[n, c, oy*stride - padding + ki*dilation, ox*stride - padding + kj*dilation]`, or zero
        /// where that falls in the padding. `out_h = (H + 2*padding - dilation*(kernel-1) - 1) /
        /// stride + 1`, likewise `out_w`.
        ///
        /// # Panics
        /// When the tensor is not 4-D, `kernel`, `stride` or `dilation` is 0, or the window is
        /// larger than the padded input.
        pub fn unfold(
            &self,
            kernel: usize,
            stride: usize,
            dilation: usize,
            padding: usize,
        ) -> Tensor<T> => self.try_unfold
    }

    /// Like [`Tensor::unfold`], returning an error for bad shapes or parameters.
    pub fn try_unfold(
        &self,
        kernel: usize,
        stride: usize,
        dilation: usize,
        padding: usize,
    ) -> Result<Tensor<T>, ShapeError> {
        let &[n, c, h, w] = self.shape() else {
            return Err(ShapeError::new(
                "unfold",
                format!(
                    "expected a 4-D [N, C, H, W] input, got shape {:?}",
                    self.shape()
                ),
            ));
        };
        let g = unfold_window("unfold", [n, c, h, w], kernel, stride, dilation, padding)?;
        let x = self.standard_layout();
        let xs = x.as_slice().expect("standard layout is contiguous");
        let l = g.positions();
        let kk = checked("unfold", kernel.checked_mul(kernel), || {
            format!("kernel*kernel for kernel {kernel}")
        })?;
        let rows = checked("unfold", c.checked_mul(kk), || {
            format!("the C*kernel*kernel rows of {c} channels with kernel {kernel}")
        })?;
        let size = checked_size::<T>("unfold", &[n, rows, l], || {
            format!(
                "unfolding shape {:?} with kernel {kernel}, stride {stride}, dilation \
                 {dilation} and padding {padding}",
                self.shape()
            )
        })?;
        let mut out = vec![T::zero(); size];
        // An empty image leaves only padding: zeros.
        if g.image() > 0 {
            for (img, cols) in xs
                .chunks_exact(g.image())
                .zip(out.chunks_exact_mut(rows * l))
            {
                g.im2col(img, cols);
            }
        }
        Ok(Tensor::from_vec(out, &[n, rows, l]))
    }

    panicking_twin! {
        /// col2im, the adjoint of [`Tensor::unfold`], as PyTorch's `F.fold` with a square `kernel`:
        /// `[N, C*kernel*kernel, L]` → `[N, C, H, W]` with `output_size = [H, W]`, summing the
        /// values of overlapping windows and dropping those that fall in the padding.
        ///
        /// # Panics
        /// When the tensor is not 3-D, its second axis is not a multiple of `kernel*kernel`,
        /// `output_size` is not `[H, W]`, or `L` is not the number of window positions over it.
        pub fn fold(
            &self,
            output_size: &[usize],
            kernel: usize,
            stride: usize,
            dilation: usize,
            padding: usize,
        ) -> Tensor<T> => self.try_fold
    }

    /// Like [`Tensor::fold`], returning an error for bad shapes or parameters.
    pub fn try_fold(
        &self,
        output_size: &[usize],
        kernel: usize,
        stride: usize,
        dilation: usize,
        padding: usize,
    ) -> Result<Tensor<T>, ShapeError> {
        let shape = self.shape();
        let (&[n, ckk, l], &[h, w]) = (shape, output_size) else {
            return Err(ShapeError::new(
                "fold",
                format!(
                    "expected a 3-D [N, C*k*k, L] input and output_size [H, W], got shape \
                     {shape:?} and output_size {output_size:?}"
                ),
            ));
        };
        let kk = checked("fold", kernel.checked_mul(kernel), || {
            format!("kernel*kernel for kernel {kernel}")
        })?;
        if kk == 0 || ckk % kk != 0 {
            return Err(ShapeError::new(
                "fold",
                format!(
                    "axis 1 of shape {shape:?} must be a multiple of kernel*kernel = {kk} \
                     (kernel {kernel})"
                ),
            ));
        }
        let c = ckk / kk;
        let g = unfold_window("fold", [n, c, h, w], kernel, stride, dilation, padding)?;
        if g.positions() != l {
            return Err(ShapeError::new(
                "fold",
                format!(
                    "shape {shape:?} has {l} window positions, but output_size {output_size:?} \
                     with kernel {kernel}, stride {stride}, dilation {dilation}, padding \
                     {padding} has {} ({}x{})",
                    g.positions(),
                    g.oh,
                    g.ow
                ),
            ));
        }
        let cols = self.standard_layout();
        let cs = cols.as_slice().expect("standard layout is contiguous");
        let size = checked_size::<T>("fold", &[n, c, h, w], || {
            format!("output_size {output_size:?} for shape {shape:?}")
        })?;
        let mut out = vec![T::zero(); size];
        if g.image() > 0 {
            for (img, cols) in out
                .chunks_exact_mut(g.image())
                .zip(cs.chunks_exact(ckk * l))
            {
                g.col2im_add(cols, img);
            }
        }
        Ok(Tensor::from_vec(out, &[n, c, h, w]))
    }
}

// ---- rules ----------------------------------------------------------------------------------
//
// All linear: the JVP is the op on the tangent (`pad` pads it with zeros: `fill` is a constant),
// the VJP the adjoint.
//
// | op     | JVP                          | VJP                                             |
// |--------|------------------------------|-------------------------------------------------|
// | shrink | dx.shrink(ranges)            | g padded with zeros back to x_shape             |
// | pad    | dx.pad(ranges, 0)            | g.shrink(before..len - after per axis)          |
// | flip   | dx.flip(axes)                | g.flip(axes)                                    |
// | unfold | dx.unfold(k, s, d, p)        | g.fold([H, W] of x_shape, k, s, d, p)           |
// | fold   | dx.fold(size, k, s, d, p)    | g.unfold(k, s, d, p)                            |

/// Rules of the slicing ops (see the module's table).
pub mod rules {
    use super::*;

    /// JVP of `x.shrink(ranges)`.
    pub fn shrink_jvp<T: Element>(ranges: &[(usize, usize)], dx: &Tensor<T>) -> Tensor<T> {
        dx.shrink(ranges)
    }
    /// VJP of `x.shrink(ranges)`: `g` put back in place in zeros of `x`'s shape.
    pub fn shrink_vjp<T: Element>(
        g: &Tensor<T>,
        x_shape: &[usize],
        ranges: &[(usize, usize)],
    ) -> Tensor<T> {
        let pad = |(&(start, end), &len): (&(usize, usize), &usize)| (start, len - end);
        if ranges.len() <= 4 {
            // Without an allocation, for the tensors of few axes that the loops of small
            // models slice.
            let pads: ArrayVec<_, 4> = ranges.iter().zip(x_shape).map(pad).collect();
            return g.pad(&pads, T::zero());
        }
        let pads: Vec<(usize, usize)> = ranges.iter().zip(x_shape).map(pad).collect();
        g.pad(&pads, T::zero())
    }

    /// [`shrink_vjp`] added into `x`'s adjoint: into the slice `ranges` of it, in place, when
    /// the adjoint has its own elements (copied first when shared), so that a loop reading one
    /// slice a step costs the slice a step in the backward pass, not the whole of `x` and an
    /// allocation. A first contribution, or a small (inline) adjoint, is padded as before.
    pub fn shrink_vjp_into<T: Element>(
        adjoint: &mut Option<Tensor<T>>,
        g: &Tensor<T>,
        x_shape: &[usize],
        ranges: &[(usize, usize)],
    ) {
        match adjoint {
            Some(a) if !a.is_inline() && a.shape() == x_shape => {
                // A cut of the first axis alone is one run of the row-major elements.
                let first_axis_only = ranges
                    .iter()
                    .zip(x_shape)
                    .skip(1)
                    .all(|(&(start, end), &len)| start == 0 && end == len);
                if let (true, Some(g), Some(&(start, end))) =
                    (first_axis_only, g.as_slice(), ranges.first())
                {
                    let row: usize = x_shape[1..].iter().product();
                    if let Some(data) = a.unique_slice_mut() {
                        let run = &mut data[start * row..end * row];
                        for (a, &b) in run.iter_mut().zip(g) {
                            *a += b;
                        }
                        return;
                    }
                }
                let g = g.view();
                let data = a.data_mut();
                let mut part = data.slice_each_axis_mut(|ad| {
                    let (start, end) = ranges[ad.axis.index()];
                    Slice::from(start..end)
                });
                part.zip_mut_with(&g, |a, &b| *a += b);
            }
            _ => crate::slots::accumulate(adjoint, shrink_vjp(g, x_shape, ranges)),
        }
    }

    /// JVP of `x.pad(ranges, fill)` (the fill is a constant: the tangent is padded with zeros).
    pub fn pad_jvp<T: Element>(ranges: &[(usize, usize)], dx: &Tensor<T>) -> Tensor<T> {
        dx.pad(ranges, T::zero())
    }
    /// VJP of `x.pad(ranges, fill)`: the part of `g` over `x`.
    pub fn pad_vjp<T: Element>(g: &Tensor<T>, ranges: &[(usize, usize)]) -> Tensor<T> {
        let inner: Vec<(usize, usize)> = ranges
            .iter()
            .zip(g.shape())
            .map(|(&(before, after), &len)| (before, len - after))
            .collect();
        g.shrink(&inner)
    }

    /// JVP of `x.flip(axes)`.
    pub fn flip_jvp<T: Element>(axes: &[usize], dx: &Tensor<T>) -> Tensor<T> {
        dx.flip(axes)
    }
    /// VJP of `x.flip(axes)`.
    pub fn flip_vjp<T: Element>(g: &Tensor<T>, axes: &[usize]) -> Tensor<T> {
        g.flip(axes)
    }

    /// JVP of `x.unfold(kernel, stride, dilation, padding)`.
    pub fn unfold_jvp<T: Element>(
        kernel: usize,
        stride: usize,
        dilation: usize,
        padding: usize,
        dx: &Tensor<T>,
    ) -> Tensor<T> {
        dx.unfold(kernel, stride, dilation, padding)
    }
    /// VJP of `x.unfold(kernel, stride, dilation, padding)`: `g` folded back to `x`'s shape.
    pub fn unfold_vjp<T: Element>(
        g: &Tensor<T>,
        x_shape: &[usize],
        kernel: usize,
        stride: usize,
        dilation: usize,
        padding: usize,
    ) -> Tensor<T> {
        g.fold(&x_shape[2..], kernel, stride, dilation, padding)
    }

    /// JVP of `x.fold(output_size, kernel, stride, dilation, padding)`.
    pub fn fold_jvp<T: Element>(
        output_size: &[usize],
        kernel: usize,
        stride: usize,
        dilation: usize,
        padding: usize,
        dx: &Tensor<T>,
    ) -> Tensor<T> {
        dx.fold(output_size, kernel, stride, dilation, padding)
    }
    /// VJP of `x.fold(output_size, kernel, stride, dilation, padding)`: `g` unfolded.
    pub fn fold_vjp<T: Element>(
        g: &Tensor<T>,
        kernel: usize,
        stride: usize,
        dilation: usize,
        padding: usize,
    ) -> Tensor<T> {
        g.unfold(kernel, stride, dilation, padding)
    }
}
