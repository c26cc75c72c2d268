//! The geometry of a 2-D sliding window over NCHW input, shared by `unfold`/`fold`, `conv2d`
//! and pooling, and im2col and its adjoint, written once for `unfold`/`fold` and `conv2d`.
//!
//! A kernel of `KH x KW` taps `dilation` apart slides `stride` apart over each `H x W` image
//! padded by `padding` zeros on all four sides, stopping where it would run past the padding:
//! `OH = (H + 2·padding − span) / stride + 1` positions down (rounded down), with
//! `span = dilation·(KH − 1) + 1`, likewise `OW` across. At position `(oy, ox)` tap `(ki, kj)`
//! reads input row `oy·stride + ki·dilation − padding` and column
//! `ox·stride + kj·dilation − padding`, or zero where that falls in the padding.
//!
//! One image's patch matrix (im2col) is `[C·KH·KW, OH·OW]`: row `(c·KH + ki)·KW + kj`,
//! column `oy·OW + ox`. It is `unfold`'s output for the image and what `conv2d` multiplies its
//! weight with.

use crate::element::Element;
use crate::error::{checked, ShapeError};

/// What [`Window::new`] found wrong with a geometry, for the op to word in its own error.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Misfit {
    /// The span `dilation·(kernel − 1) + 1` of an axis overflows `usize`.
    Span,
    /// The padded size `size + 2·padding` of an axis overflows `usize`.
    Padded,
    /// The kernel spans `span` (down, across), more than the `padded` image.
    TooLarge {
        span: (usize, usize),
        padded: (usize, usize),
    },
}

/// A 2-D sliding window over an `[N, C, H, W]` input (see the module's doc).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    pub(crate) n: usize,
    pub(crate) c: usize,
    pub(crate) h: usize,
    pub(crate) w: usize,
    pub(crate) kh: usize,
    pub(crate) kw: usize,
    pub(crate) stride: usize,
    pub(crate) dilation: usize,
    pub(crate) padding: usize,
    pub(crate) oh: usize,
    pub(crate) ow: usize,
}

impl Window {
    /// The window of a `kernel = (KH, KW)` kernel over input `x = [N, C, H, W]`, or an error of
    /// `op` worded by `words` when a span or padded size overflows or the kernel does not fit
    /// in the padded image. An empty kernel spans nothing and fits anywhere.
    ///
    /// `stride` and `dilation` must be positive: each op checks its parameters first, in its
    /// own words.
    pub(crate) fn new(
        op: &'static str,
        x: [usize; 4],
        kernel: (usize, usize),
        stride: usize,
        dilation: usize,
        padding: usize,
        words: impl Fn(Misfit) -> String,
    ) -> Result<Window, ShapeError> {
        debug_assert!(
            stride > 0 && dilation > 0,
            "{op}: stride and dilation are checked first"
        );
        let [n, c, h, w] = x;
        let span = |k: usize| {
            let span = k.checked_sub(1).map_or(Some(0), |k| {
                dilation.checked_mul(k).and_then(|s| s.checked_add(1))
            });
            checked(op, span, || words(Misfit::Span))
        };
        let (span_h, span_w) = (span(kernel.0)?, span(kernel.1)?);
        let padded = |len: usize| {
            checked(
                op,
                padding.checked_mul(2).and_then(|p| p.checked_add(len)),
                || words(Misfit::Padded),
            )
        };
        let (ph, pw) = (padded(h)?, padded(w)?);
        if span_h > ph || span_w > pw {
            return Err(ShapeError::new(
                op,
                words(Misfit::TooLarge {
                    span: (span_h, span_w),
                    padded: (ph, pw),
                }),
            ));
        }
        Ok(Window {
            n,
            c,
            h,
            w,
            kh: kernel.0,
            kw: kernel.1,
            stride,
            dilation,
            padding,
            oh: (ph - span_h) / stride + 1,
            ow: (pw - span_w) / stride + 1,
        })
    }

    /// The input's shape `[N, C, H, W]`.
    pub(crate) fn x_shape(&self) -> [usize; 4] {
        [self.n, self.c, self.h, self.w]
    }

    /// The shape `[N, channels, OH, OW]` of an output with a value per window position.
    pub(crate) fn out_shape(&self, channels: usize) -> [usize; 4] {
        [self.n, channels, self.oh, self.ow]
    }

    /// Window positions per image plane: `OH·OW`, the patch matrix's columns.
    pub(crate) fn positions(&self) -> usize {
        self.oh * self.ow
    }

    /// Elements of one image: `C·H·W`.
    pub(crate) fn image(&self) -> usize {
        self.c * self.h * self.w
    }

    /// Rows of the patch matrix: `C·KH·KW`.
    pub(crate) fn patch(&self) -> usize {
        self.c * self.kh * self.kw
    }

    /// The positions `lo..hi` of `0..out` at which tap `tap` reads inside `0..len` (an axis of
    /// `len` input elements and `out` positions).
    fn inside(&self, tap: usize, len: usize, out: usize) -> (usize, usize) {
        // `tap * dilation` is within the span, and `len + padding` within the padded size.
        let (k, pad, s) = (tap * self.dilation, self.padding, self.stride);
        let lo = if pad > k { (pad - k).div_ceil(s) } else { 0 };
        let hi = if len + pad > k {
            (len + pad - k).div_ceil(s).min(out)
        } else {
            0
        };
        (lo.min(hi), hi)
    }

    /// The input index that tap `tap` reads at position `o`, for `o` in [`Window::inside`]'s
    /// range.
    fn input(&self, o: usize, tap: usize) -> usize {
        o * self.stride + tap * self.dilation - self.padding
    }

    /// Writes one image's patch matrix `[C·KH·KW, OH·OW]` into `cols`, every element: zero
    /// where a tap falls in the padding.
    pub(crate) fn im2col<T: Element>(&self, img: &[T], cols: &mut [T]) {
        let s = self.stride;
        let plane_len = self.h * self.w;
        let mut rows = cols.chunks_exact_mut(self.positions());
        for plane in 0..self.c {
            let plane = &img[plane * plane_len..(plane + 1) * plane_len];
            for ki in 0..self.kh {
                let (oy_lo, oy_hi) = self.inside(ki, self.h, self.oh);
                for kj in 0..self.kw {
                    let (ox_lo, ox_hi) = self.inside(kj, self.w, self.ow);
                    let row = rows.next().expect("im2col: one row per (c, ki, kj)");
                    if s == 1 && self.ow == self.w && oy_lo < oy_hi && ox_lo < ox_hi {
                        self.shifted_row(plane, (ki, kj), (oy_lo, oy_hi), (ox_lo, ox_hi), row);
                        continue;
                    }
                    for (oy, dst) in row.chunks_exact_mut(self.ow).enumerate() {
                        if oy < oy_lo || oy >= oy_hi || ox_lo == ox_hi {
                            dst.fill(T::zero());
                            continue;
                        }
                        let iy = self.input(oy, ki);
                        let src = &plane[iy * self.w..(iy + 1) * self.w];
                        dst[..ox_lo].fill(T::zero());
                        dst[ox_hi..].fill(T::zero());
                        let x0 = self.input(ox_lo, kj);
                        let dst = &mut dst[ox_lo..ox_hi];
                        if s == 1 {
                            dst.copy_from_slice(&src[x0..x0 + dst.len()]);
                        } else {
                            for (d, v) in dst.iter_mut().zip(src[x0..].iter().step_by(s)) {
                                *d = *v;
                            }
                        }
                    }
                }
            }
        }
    }

    /// One row of the patch matrix, for tap `(ki, kj)`, when the stride is 1 and each output
    /// row is as wide as an input row: then the row is the plane shifted by a constant, one
    /// copy of the run between the first and the last position inside, with the positions of
    /// each output row whose tap falls in the padding (copied from the neighbouring rows)
    /// zeroed after. `oy` and `ox` are the ranges inside, both non-empty.
    fn shifted_row<T: Element>(
        &self,
        plane: &[T],
        (ki, kj): (usize, usize),
        (oy_lo, oy_hi): (usize, usize),
        (ox_lo, ox_hi): (usize, usize),
        row: &mut [T],
    ) {
        let ow = self.ow;
        let start = oy_lo * ow + ox_lo;
        let end = (oy_hi - 1) * ow + ox_hi;
        let src = self.input(oy_lo, ki) * self.w + self.input(ox_lo, kj);
        row[..start].fill(T::zero());
        row[start..end].copy_from_slice(&plane[src..src + (end - start)]);
        row[end..].fill(T::zero());
        // Column by column: a few elements an output row, stored one by one rather than in a
        // call to `memset` each.
        for ox in (0..ox_lo).chain(ox_hi..ow) {
            for oy in oy_lo..oy_hi {
                row[oy * ow + ox] = T::zero();
            }
        }
    }

    /// The adjoint of [`Window::im2col`] (col2im): adds each entry of one image's patch matrix
    /// `cols` to the element of `img` it was read from; entries on the padding are dropped.
    pub(crate) fn col2im_add<T: Element>(&self, cols: &[T], img: &mut [T]) {
        let s = self.stride;
        let plane_len = self.h * self.w;
        let mut rows = cols.chunks_exact(self.positions());
        // The additions run in a loop compiled for the CPU's vector instructions.
        crate::vmath::vectorised(
            #[inline(always)]
            || {
                for plane in 0..self.c {
                    let plane = &mut img[plane * plane_len..(plane + 1) * plane_len];
                    for ki in 0..self.kh {
                        let (oy_lo, oy_hi) = self.inside(ki, self.h, self.oh);
                        for kj in 0..self.kw {
                            let (ox_lo, ox_hi) = self.inside(kj, self.w, self.ow);
                            let row = rows.next().expect("col2im: one row per (c, ki, kj)");
                            if ox_lo == ox_hi {
                                continue;
                            }
                            for oy in oy_lo..oy_hi {
                                let src = &row[oy * self.ow + ox_lo..oy * self.ow + ox_hi];
                                let iy = self.input(oy, ki);
                                let x0 = self.input(ox_lo, kj);
                                let dst = &mut plane[iy * self.w + x0..(iy + 1) * self.w];
                                if s == 1 {
                                    for (d, v) in dst.iter_mut().zip(src) {
                                        *d += *v;
                                    }
                                } else {
                                    for (d, v) in dst.iter_mut().step_by(s).zip(src) {
                                        *d += *v;
                                    }
                                }
                            }
                        }
                    }
                }
            },
        );
    }

    /// Calls `f(base, out_index)` for every window of every plane, in output order, with
    /// `base` the flat NCHW index of the window's top-left element. For a window without
    /// padding or dilation (pooling's), where every window lies inside its image.
    pub(crate) fn for_each_window(&self, mut f: impl FnMut(usize, usize)) {
        debug_assert!(self.padding == 0 && self.dilation == 1);
        let plane_len = self.h * self.w;
        let mut out = 0;
        for p in 0..self.n * self.c {
            for oy in 0..self.oh {
                let row = p * plane_len + oy * self.stride * self.w;
                for ox in 0..self.ow {
                    f(row + ox * self.stride, out);
                    out += 1;
                }
            }
        }
    }

    /// [`Window::for_each_window`] for a 2x2 kernel, calling `f(indices, out_index)` with the
    /// flat indices of the window's four elements (row by row, as [`Window::elements`]): no
    /// iterator per window.
    pub(crate) fn for_each_window2(&self, mut f: impl FnMut([usize; 4], usize)) {
        debug_assert!(self.kh == 2 && self.kw == 2);
        let w = self.w;
        self.for_each_window(|a, out| f([a, a + 1, a + w, a + w + 1], out));
    }

    /// The flat indices of the window at `base` (from [`Window::for_each_window`]), row by row.
    pub(crate) fn elements(&self, base: usize) -> impl Iterator<Item = usize> {
        let (kh, kw, w) = (self.kh, self.kw, self.w);
        (0..kh).flat_map(move |i| {
            let start = base + i * w;
            start..start + kw
        })
    }
}
