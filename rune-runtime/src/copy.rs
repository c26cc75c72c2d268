//! Copies of runs of elements that stay fast where the C library's `memcpy` is slow.
//!
//! glibc copies a run of more than about 2 KiB with `rep movsb`. On AMD's Zen cores that
//! instruction falls to a byte-at-a-time path when the destination lies a few bytes after the
//! source modulo the 4 KiB page: `pad(&[(1, 0)], ..)` of a 1-D tensor into a buffer the
//! allocator took from the same size class as the input is exactly that case (the output 8
//! bytes ahead of the input, page for page), and it copied 2.2 ns an element where 0.08 is
//! the rule: 40% of GradBench's `ode`, whose vector field shifts its state by one element
//! with `shrink` and `pad` in every RK4 stage. glibc 2.36 (Debian 12) does not avoid it for
//! AMD. Such a run is copied here in pieces of at most [`PIECE`] bytes, which glibc copies
//! with vector loads and stores; every other run is one `memcpy`.

use ndarray::{ArrayView, ArrayView1, ArrayViewD, Dimension, Ix1, Ix2, Ix3};

/// The largest piece, in bytes, of a run copied in pieces: below glibc's `rep movsb`
/// threshold on the machines measured (2 KiB pieces avoided the slow path, 4 KiB did not).
const PIECE: usize = 2048;

/// Where the destination lies this few bytes (or fewer, but more than none) after the source
/// modulo a page, `rep movsb` is slow on AMD (8 and 16 bytes measured; 32 not).
const SHORT_DISTANCE: usize = 64;

/// Whether a run of `bytes` bytes from `src` to `dst` is one that `rep movsb` copies slowly.
#[inline]
fn slow_for_rep_movsb(dst: usize, src: usize, bytes: usize) -> bool {
    let distance = dst.wrapping_sub(src) % 4096;
    bytes > PIECE && distance != 0 && distance < SHORT_DISTANCE
}

/// `dst.clone_from_slice(src)`, in pieces where one `memcpy` would be slow.
///
/// # Panics
/// When the lengths differ.
#[inline]
pub(crate) fn copy_elems<T: Clone>(dst: &mut [T], src: &[T]) {
    let bytes = std::mem::size_of_val(src);
    if !slow_for_rep_movsb(dst.as_ptr() as usize, src.as_ptr() as usize, bytes) {
        dst.clone_from_slice(src);
        return;
    }
    let piece = (PIECE / std::mem::size_of::<T>().max(1)).max(1);
    for (d, s) in dst.chunks_mut(piece).zip(src.chunks(piece)) {
        d.clone_from_slice(s);
    }
}

/// `out.extend_from_slice(src)`, in pieces where one `memcpy` would be slow.
#[inline]
pub(crate) fn extend_elems<T: Clone>(out: &mut Vec<T>, src: &[T]) {
    out.reserve(src.len());
    let dst = out.as_ptr().wrapping_add(out.len()) as usize;
    if !slow_for_rep_movsb(dst, src.as_ptr() as usize, std::mem::size_of_val(src)) {
        out.extend_from_slice(src);
        return;
    }
    let piece = (PIECE / std::mem::size_of::<T>().max(1)).max(1);
    for s in src.chunks(piece) {
        out.extend_from_slice(s);
    }
}

/// Calls `each` on the rows (the lanes along the last axis) of `view` in row-major order,
/// through a view of fixed rank where it has up to three axes. ndarray's element iterator
/// over dynamic dimensions costs about 20 ns an element on a transposed matrix; a row at a
/// time it is a strided loop (1–2 ns). A 0-d view is one row of one element.
pub(crate) fn for_each_row<T>(view: ArrayViewD<'_, T>, mut each: impl FnMut(ArrayView1<'_, T>)) {
    fn rows<T, D: Dimension>(v: ArrayView<'_, T, D>, each: &mut impl FnMut(ArrayView1<'_, T>)) {
        for row in v.rows() {
            each(row);
        }
    }
    match view.ndim() {
        0 => each(view.into_shape_with_order(1).expect("one element")),
        1 => rows(view.into_dimensionality::<Ix1>().expect("1-d"), &mut each),
        2 => rows(view.into_dimensionality::<Ix2>().expect("2-d"), &mut each),
        3 => rows(view.into_dimensionality::<Ix3>().expect("3-d"), &mut each),
        _ => rows(view, &mut each),
    }
}

/// The elements of `view` in row-major order, a row at a time ([`for_each_row`]): a
/// contiguous row is one copy.
pub(crate) fn row_major_vec<T: Clone>(view: ArrayViewD<'_, T>) -> Vec<T> {
    let mut out = Vec::with_capacity(view.len());
    for_each_row(view, |row| match row.as_slice() {
        Some(s) => extend_elems(&mut out, s),
        None => out.extend(row.iter().cloned()),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Views of every rank up to five, permuted, reversed, sliced and broadcast, come out in
    /// row-major order: against each element read by its index, in row-major order of indices.
    #[test]
    fn rows_come_in_row_major_order_in_every_layout() {
        use ndarray::{ArrayD, Axis, IxDyn, Slice};
        fn by_index(v: &ArrayViewD<'_, f64>) -> Vec<f64> {
            let shape = v.shape().to_vec();
            let mut index = vec![0; shape.len()];
            let mut out = Vec::new();
            if shape.contains(&0) {
                return out;
            }
            loop {
                out.push(v[IxDyn(&index)]);
                // The next index, the last axis fastest.
                let Some(k) = (0..shape.len()).rev().find(|&k| index[k] + 1 < shape[k]) else {
                    return out;
                };
                index[k] += 1;
                index[k + 1..].fill(0);
            }
        }
        for shape in [
            &[][..],
            &[5],
            &[3, 4],
            &[2, 3, 4],
            &[2, 1, 3, 2],
            &[2, 2, 1, 3, 2],
        ] {
            let n = shape.iter().product::<usize>();
            let a =
                ArrayD::from_shape_vec(IxDyn(shape), (0..n).map(|i| i as f64).collect()).unwrap();
            let rank = shape.len();
            let reversed: Vec<usize> = (0..rank).rev().collect();
            let mut views = vec![a.view(), a.view().permuted_axes(reversed)];
            if rank > 0 {
                let mut flipped = a.view();
                flipped.invert_axis(Axis(rank - 1));
                views.push(flipped);
                let mut part = a.view();
                part.slice_axis_inplace(Axis(0), Slice::from(1..));
                views.push(part);
            }
            let mut wide = shape.to_vec();
            wide.insert(0, 3);
            let wide = IxDyn(&wide);
            views.push(a.broadcast(wide).unwrap());
            for v in views {
                assert_eq!(
                    row_major_vec(v.clone()),
                    by_index(&v),
                    "{:?} {:?}",
                    v.shape(),
                    v.strides()
                );
            }
        }
    }

    /// Every distance and length around the thresholds copies every element.
    #[test]
    fn copies_every_element_at_every_distance() {
        let src: Vec<f64> = (0..3000).map(|i| i as f64 * 0.5 - 7.0).collect();
        let mut buf = vec![0.0f64; 8000];
        for shift in [0usize, 1, 2, 3, 4, 7, 8, 9, 511, 512, 513] {
            for len in [0usize, 1, 255, 256, 257, 1000, 3000] {
                // The destination a few elements after the source's page offset.
                let base = buf.as_ptr() as usize;
                let src_off = (src.as_ptr() as usize) % 4096;
                let start = ((src_off + 4096 - base % 4096) % 4096) / 8 + shift;
                let dst = &mut buf[start..start + len];
                dst.fill(f64::NAN);
                copy_elems(dst, &src[..len]);
                assert_eq!(dst, &src[..len], "shift {shift}, length {len}");

                let mut out = vec![1.0; shift];
                extend_elems(&mut out, &src[..len]);
                assert_eq!(&out[..shift], &vec![1.0; shift][..]);
                assert_eq!(&out[shift..], &src[..len], "shift {shift}, length {len}");
            }
        }
    }

    #[test]
    fn short_distances_are_the_slow_ones() {
        assert!(slow_for_rep_movsb(4096 * 7 + 8, 4096 * 3, 8192));
        assert!(slow_for_rep_movsb(4096 * 7 + 100 + 16, 100, 8192));
        assert!(!slow_for_rep_movsb(4096 * 7 + 8, 4096 * 3, 1024));
        assert!(!slow_for_rep_movsb(4096 * 7, 4096 * 3, 8192));
        assert!(!slow_for_rep_movsb(4096 * 3, 4096 * 7 + 8, 8192));
    }
}
