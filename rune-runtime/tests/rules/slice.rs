//! `shrink`, `pad`, `flip`, `unfold`, `fold`.

use rune_runtime::__private::rules::*;
use rune_runtime::{Element, Tensor};

use crate::common::{assert_close, panic_message, tensor, uniform, Case};

/// (input shape, kernel, stride, dilation, padding) for `unfold`/`fold`: plain, strided with
/// padding, dilated, a stride larger than the kernel (gaps), non-square inputs, several
/// channels and batch elements.
const WINDOWS: &[([usize; 4], usize, usize, usize, usize)] = &[
    ([1, 2, 5, 5], 3, 1, 1, 0),
    ([2, 1, 6, 7], 2, 2, 1, 1),
    ([1, 2, 7, 6], 3, 2, 2, 2),
    ([2, 3, 7, 5], 2, 3, 1, 0),
    ([1, 1, 4, 4], 1, 1, 1, 1),
    ([1, 1, 3, 3], 2, 2, 2, 3),
];

/// A per-axis `(start, end)` or `(before, after)` list.
type Ranges = &'static [(usize, usize)];

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    let x34 = uniform::<T>(&[3, 4], -2.0, 2.0, 2000);
    let x234 = uniform::<T>(&[2, 3, 4], -2.0, 2.0, 2001);

    let shrinks: [(Tensor<T>, Ranges); 3] = [
        (x34.clone(), &[(1, 3), (0, 2)]),
        (x234.clone(), &[(0, 2), (1, 2), (1, 4)]),
        (x34.clone(), &[(0, 3), (2, 2)]),
    ];
    for (x, ranges) in shrinks {
        cases.push(Case::new(
            "shrink",
            "ranges per axis",
            vec![x],
            move |x| x[0].shrink(ranges),
            move |_, t| shrink_jvp(ranges, &t[0]),
            move |x, g| vec![shrink_vjp(g, x[0].shape(), ranges)],
        ));
    }

    let fill = T::from_f64(0.5);
    let pads: [(Tensor<T>, Ranges); 5] = [
        (x34.clone(), &[(1, 0), (2, 1)]),
        (x234.clone(), &[(0, 0), (1, 1), (0, 3)]),
        (uniform::<T>(&[], -2.0, 2.0, 2002), &[]),
        // The first axis alone (written as three runs), and a slice of a longer vector.
        (x234.clone(), &[(1, 2), (0, 0), (0, 0)]),
        (
            uniform::<T>(&[9], -2.0, 2.0, 2003).shrink(&[(0, 8)]),
            &[(1, 0)],
        ),
    ];
    for (x, ranges) in pads {
        cases.push(Case::new(
            "pad",
            "constant fill",
            vec![x],
            move |x| x[0].pad(ranges, fill),
            move |_, t| pad_jvp(ranges, &t[0]),
            move |_, g| vec![pad_vjp(g, ranges)],
        ));
    }

    let flips: [&'static [usize]; 4] = [&[0, 2], &[1], &[], &[2, 1, 0]];
    for axes in flips {
        cases.push(Case::new(
            "flip",
            "axes",
            vec![x234.clone()],
            move |x| x[0].flip(axes),
            move |_, t| flip_jvp(axes, &t[0]),
            move |_, g| vec![flip_vjp(g, axes)],
        ));
    }

    for (i, &(shape, k, s, d, p)) in WINDOWS.iter().enumerate() {
        cases.push(Case::new(
            "unfold",
            "im2col",
            vec![uniform::<T>(&shape, -2.0, 2.0, 2010 + i as u64)],
            move |x| x[0].unfold(k, s, d, p),
            move |_, t| unfold_jvp(k, s, d, p, &t[0]),
            move |x, g| vec![unfold_vjp(g, x[0].shape(), k, s, d, p)],
        ));
        let cols_shape = Tensor::<T>::zeros(&shape)
            .unfold(k, s, d, p)
            .shape()
            .to_vec();
        let size = [shape[2], shape[3]];
        cases.push(Case::new(
            "fold",
            "col2im",
            vec![uniform::<T>(&cols_shape, -2.0, 2.0, 2020 + i as u64)],
            move |x| x[0].fold(&size, k, s, d, p),
            move |_, t| fold_jvp(&size, k, s, d, p, &t[0]),
            move |_, g| vec![fold_vjp(g, k, s, d, p)],
        ));
    }
    cases
}

fn dot(a: &Tensor<f64>, b: &Tensor<f64>) -> f64 {
    assert_eq!(a.shape(), b.shape());
    a.to_vec().iter().zip(b.to_vec()).map(|(x, y)| x * y).sum()
}

#[test]
fn shrink_pad_flip_values() {
    // [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    let x = Tensor::<f64>::arange(12).reshape(&[3, 4]);
    assert_close(&x.shrink(&[(1, 3), (1, 3)]), &[5.0, 6.0, 9.0, 10.0], 0.0);
    assert_eq!(x.shrink(&[(0, 3), (2, 2)]).shape(), &[3, 0]);
    let y = tensor::<f64>(&[1.0, 2.0], &[1, 2]);
    assert_close(
        &y.pad(&[(1, 0), (0, 1)], 9.0),
        &[9.0, 9.0, 9.0, 1.0, 2.0, 9.0],
        0.0,
    );
    assert_close(
        &x.flip(&[0, 1]).shrink(&[(0, 1), (0, 4)]),
        &[11.0, 10.0, 9.0, 8.0],
        0.0,
    );
    assert_close(
        &x.flip(&[1]).reshape(&[12]).shrink(&[(0, 4)]),
        &[3.0, 2.0, 1.0, 0.0],
        0.0,
    );
    // Rows added before and after, around a view that starts inside its buffer.
    assert_close(
        &x.shrink(&[(1, 2), (0, 4)]).pad(&[(1, 2), (0, 0)], -1.0),
        &[
            -1.0, -1.0, -1.0, -1.0, 4.0, 5.0, 6.0, 7.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0,
            -1.0,
        ],
        0.0,
    );
    // The cotangent of `pad` is the middle part; that of `shrink` is padded back with zeros.
    let g = Tensor::<f64>::arange(9).reshape(&[3, 3]);
    assert_close(&pad_vjp(&g, &[(1, 1), (2, 0)]), &[5.0], 0.0);
    assert_close(
        &shrink_vjp(&tensor::<f64>(&[7.0], &[1, 1]), &[2, 3], &[(1, 2), (0, 1)]),
        &[0.0, 0.0, 0.0, 7.0, 0.0, 0.0],
        0.0,
    );
}

/// A small part of a larger tensor cut across its rows (a layer's weights in a packed
/// matrix) comes back row-major, the same elements as the view; a large one, or one already
/// contiguous, stays a view of the storage.
#[test]
fn small_strided_parts_are_copied_out() {
    let packed = Tensor::from_vec((0..2 * 8 * 7).map(|v| v as f64).collect(), &[2, 8, 7]);
    let weights = packed.shrink(&[(0, 2), (3, 4), (0, 7)]);
    assert!(
        weights.as_slice().is_some(),
        "a small part cut across rows is row-major"
    );
    let expected: Vec<f64> = (0..2)
        .flat_map(|k| (0..7).map(move |i| (k * 56 + 21 + i) as f64))
        .collect();
    assert_eq!(weights.to_vec(), expected);
    assert_eq!(weights.reshape(&[2, 7]).as_slice(), Some(&expected[..]));
    // Large parts stay views: a column of 300 rows.
    let large = Tensor::from_vec((0..300 * 4).map(|v| v as f64).collect(), &[300, 4]);
    let column = large.shrink(&[(0, 300), (1, 2)]);
    assert!(column.as_slice().is_none(), "a large part stays a view");
    assert_eq!(
        column.to_vec(),
        (0..300).map(|r| (4 * r + 1) as f64).collect::<Vec<_>>()
    );
}

/// Padding on every axis of a row-major tensor too large for the small path, and a 1-D shift
/// (`shrink` then `pad`) of a buffer the size of its input: each element where the formula
/// puts it.
#[test]
fn pad_of_large_tensors_on_every_axis() {
    let (shape, ranges) = ([4usize, 6, 50], [(1usize, 2usize), (0, 3), (5, 1)]);
    let value = |i: usize, j: usize, k: usize| (i * 10_000 + j * 100 + k) as f64;
    let data: Vec<f64> = (0..4 * 6 * 50)
        .map(|e| value(e / 300, e / 50 % 6, e % 50))
        .collect();
    let padded = Tensor::from_vec(data, &shape).pad(&ranges, -1.0);
    assert_eq!(padded.shape(), &[7, 9, 56]);
    let expected: Vec<f64> = (0..7 * 9 * 56usize)
        .map(|e| {
            let (i, j, k) = (e / (9 * 56), e / 56 % 9, e % 56);
            match (i.checked_sub(1), j.checked_sub(0), k.checked_sub(5)) {
                (Some(i), Some(j), Some(k)) if i < 4 && j < 6 && k < 50 => value(i, j, k),
                _ => -1.0,
            }
        })
        .collect();
    assert_close(&padded, &expected, 0.0);

    for n in [1000usize, 4096, 100_000] {
        let y = Tensor::from_vec((0..n).map(|i| i as f64).collect(), &[n]);
        let shifted = y.shrink(&[(0, n - 1)]).pad(&[(1, 0)], 0.5);
        let expected: Vec<f64> = (0..n)
            .map(|i| if i == 0 { 0.5 } else { (i - 1) as f64 })
            .collect();
        assert_close(&shifted, &expected, 0.0);
    }
}

/// `shrink_vjp_into` adds what `shrink_vjp` returns, for a first contribution, an adjoint of
/// its own (written in place), an adjoint sharing its elements with another tensor (which must
/// not change) and a small one held inline.
fn shrink_vjp_into_adds_the_padded_cotangent<T: Element>() {
    // A block inside, and whole rows (one run of the elements).
    for (ranges, g_shape) in [(&[(1, 3), (2, 4)], [2, 2]), (&[(1, 3), (0, 4)], [2, 4])] {
        shrink_vjp_into_adds_the_padded_cotangent_at::<T>(ranges, &g_shape);
    }
}

fn shrink_vjp_into_adds_the_padded_cotangent_at<T: Element>(ranges: Ranges, g_shape: &[usize]) {
    let x_shape = [3, 4];
    let g = uniform::<T>(g_shape, -1.0, 1.0, 2010);
    let padded = shrink_vjp(&g, &x_shape, ranges);
    let mut first = None;
    shrink_vjp_into(&mut first, &g, &x_shape, ranges);
    assert_eq!(first.unwrap().to_vec(), padded.to_vec());

    let a = uniform::<T>(&x_shape, -1.0, 1.0, 2011);
    let want: Vec<f64> = (a.clone() + &padded)
        .to_vec()
        .iter()
        .map(|v| v.to_real())
        .collect();
    let mut own = Some(a.clone() + T::zero());
    shrink_vjp_into(&mut own, &g, &x_shape, ranges);
    assert_close(&own.unwrap(), &want, 0.0);

    let before = a.to_vec();
    let mut shared = Some(a.clone());
    shrink_vjp_into(&mut shared, &g, &x_shape, ranges);
    assert_close(&shared.unwrap(), &want, 0.0);
    assert_eq!(
        a.to_vec(),
        before,
        "the tensor sharing the adjoint's elements changed"
    );

    let small = uniform::<T>(&[3], -1.0, 1.0, 2012);
    let g1 = uniform::<T>(&[1], -1.0, 1.0, 2013);
    let mut inline = Some(small.clone());
    shrink_vjp_into(&mut inline, &g1, &[3], &[(1, 2)]);
    let s: Vec<f64> = small.to_vec().iter().map(|v| v.to_real()).collect();
    let d = g1.to_vec()[0].to_real();
    assert_close(&inline.unwrap(), &[s[0], s[1] + d, s[2]], 0.0);
}

#[test]
fn shrink_vjp_into_adds_in_place_what_shrink_vjp_returns() {
    shrink_vjp_into_adds_the_padded_cotangent::<f64>();
    shrink_vjp_into_adds_the_padded_cotangent::<f32>();
}

#[test]
fn unfold_matches_hand_computed_im2col() {
    // x = [[1, 2, 3], [4, 5, 6], [7, 8, 9]], 2x2 windows at stride 1: positions (0,0), (0,1),
    // (1,0), (1,1); row ki*2+kj holds x[oy+ki, ox+kj].
    let x = tensor::<f64>(&[1., 2., 3., 4., 5., 6., 7., 8., 9.], &[1, 1, 3, 3]);
    let cols = x.unfold(2, 1, 1, 0);
    assert_eq!(cols.shape(), &[1, 4, 4]);
    assert_close(
        &cols,
        &[
            1., 2., 4., 5., //
            2., 3., 5., 6., //
            4., 5., 7., 8., //
            5., 6., 8., 9.,
        ],
        0.0,
    );

    // Padding 1 on [[1, 2], [3, 4]]: a 3x3 grid of positions, row (ki, kj) holds
    // x[oy - 1 + ki, ox - 1 + kj] or 0.
    let x = tensor::<f64>(&[1., 2., 3., 4.], &[1, 1, 2, 2]);
    let cols = x.unfold(2, 1, 1, 1);
    assert_eq!(cols.shape(), &[1, 4, 9]);
    assert_close(
        &cols,
        &[
            0., 0., 0., 0., 1., 2., 0., 3., 4., //
            0., 0., 0., 1., 2., 0., 3., 4., 0., //
            0., 1., 2., 0., 3., 4., 0., 0., 0., //
            1., 2., 0., 3., 4., 0., 0., 0., 0.,
        ],
        0.0,
    );

    // x[i, j] = 4i + j on a 4x4 grid. Stride 2: row (0, 0) holds x[2oy, 2ox].
    let x = Tensor::<f64>::arange(16).reshape(&[1, 1, 4, 4]);
    let cols = x.unfold(2, 2, 1, 0);
    assert_eq!(cols.shape(), &[1, 4, 4]);
    assert_close(
        &cols.shrink(&[(0, 1), (0, 1), (0, 4)]),
        &[0., 2., 8., 10.],
        0.0,
    );
    // Dilation 2, stride 1: a 2x2 grid; row (1, 1) holds x[oy + 2, ox + 2].
    let cols = x.unfold(2, 1, 2, 0);
    assert_eq!(cols.shape(), &[1, 4, 4]);
    assert_close(
        &cols.shrink(&[(0, 1), (3, 4), (0, 4)]),
        &[10., 11., 14., 15.],
        0.0,
    );

    // Rows are channel-major: with one window position covering the whole 2x2 input, row
    // c*4 + ki*2 + kj is x[c, ki, kj], i.e. the input in row-major order.
    let x = Tensor::<f64>::arange(16).reshape(&[2, 2, 2, 2]);
    let cols = x.unfold(2, 1, 1, 0);
    assert_eq!(cols.shape(), &[2, 8, 1]);
    assert_eq!(cols.to_vec(), x.to_vec());
}

/// im2col straight from its definition, one element at a time.
fn naive_unfold(x: &Tensor<f64>, k: usize, s: usize, d: usize, p: usize) -> Vec<f64> {
    let &[n, c, h, w] = x.shape() else {
        panic!("4-D input expected")
    };
    let a = x.to_array();
    let out_h = (h + 2 * p - d * (k - 1) - 1) / s + 1;
    let out_w = (w + 2 * p - d * (k - 1) - 1) / s + 1;
    let mut out = Vec::new();
    for ni in 0..n {
        for ci in 0..c {
            for ki in 0..k {
                for kj in 0..k {
                    for oy in 0..out_h {
                        for ox in 0..out_w {
                            let iy = (oy * s + ki * d) as isize - p as isize;
                            let ix = (ox * s + kj * d) as isize - p as isize;
                            let inside =
                                (0..h as isize).contains(&iy) && (0..w as isize).contains(&ix);
                            out.push(if inside {
                                a[[ni, ci, iy as usize, ix as usize]]
                            } else {
                                0.0
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn unfold_matches_its_definition() {
    for (i, &(shape, k, s, d, p)) in WINDOWS.iter().enumerate() {
        let x = Tensor::<f64>::rand_normal(&shape, 0.0, 1.0, 60 + i as u64);
        assert_eq!(
            x.unfold(k, s, d, p).to_vec(),
            naive_unfold(&x, k, s, d, p),
            "{shape:?} k{k} s{s} d{d} p{p}"
        );
    }
}

#[test]
fn fold_sums_overlapping_windows() {
    // Every pixel of a 3x3 image gets one count per 2x2 window covering it.
    let ones = Tensor::<f64>::ones(&[1, 4, 4]);
    assert_close(
        &ones.fold(&[3, 3], 2, 1, 1, 0),
        &[1., 2., 1., 2., 4., 2., 1., 2., 1.],
        0.0,
    );
    // Stride 3 with a 2x2 kernel on a 5x5 image leaves row and column 2 uncovered.
    let ones = Tensor::<f64>::ones(&[1, 4, 4]);
    let img = ones.fold(&[5, 5], 2, 3, 1, 0);
    let row2 = img.shrink(&[(0, 1), (0, 1), (2, 3), (0, 5)]);
    assert_close(&row2, &[0.0; 5], 0.0);
    assert_close(
        &img.shrink(&[(0, 1), (0, 1), (0, 1), (0, 5)]),
        &[1., 1., 0., 1., 1.],
        0.0,
    );
}

#[test]
fn unfold_and_fold_are_adjoint() {
    for (i, &(shape, k, s, d, p)) in WINDOWS.iter().enumerate() {
        let x = Tensor::<f64>::rand_normal(&shape, 0.0, 1.0, 70 + i as u64);
        let cols = x.unfold(k, s, d, p);
        let y = Tensor::<f64>::rand_normal(cols.shape(), 0.0, 1.0, 80 + i as u64);
        let lhs = dot(&cols, &y);
        let rhs = dot(&x, &y.fold(&shape[2..], k, s, d, p));
        assert!(
            (lhs - rhs).abs() <= 1e-10 * (1.0 + lhs.abs()),
            "{shape:?} k{k} s{s} d{d} p{p}: {lhs} vs {rhs}"
        );
    }
}

#[test]
fn unfold_accepts_non_row_major_input() {
    let x = Tensor::<f64>::arange(9).reshape(&[1, 1, 3, 3]);
    let xt = x.permute(&[0, 1, 3, 2]);
    // x transposed is [[0, 3, 6], [1, 4, 7], [2, 5, 8]]; the 2x2 window at (0, 0) row-major.
    let cols = xt.unfold(2, 1, 1, 0);
    let first: Vec<f64> = (0..4).map(|r| cols.to_vec()[r * 4]).collect();
    assert_eq!(first, vec![0.0, 3.0, 1.0, 4.0]);
}

#[test]
fn bad_input_names_the_op_and_shapes() {
    let x = Tensor::<f64>::zeros(&[3, 4]);
    let msg = panic_message(|| x.shrink(&[(0, 4), (0, 1)]));
    assert!(
        msg.starts_with("shrink:") && msg.contains("[3, 4]"),
        "{msg}"
    );
    assert!(x.try_shrink(&[(2, 1), (0, 1)]).is_err());
    let err = x.try_shrink(&[(0, 1)]).unwrap_err();
    assert!(
        err.op() == "shrink" && err.message().contains("[3, 4]"),
        "{err}"
    );
    let msg = panic_message(|| x.pad(&[(1, 1)], 0.0));
    assert!(msg.starts_with("pad:") && msg.contains("[3, 4]"), "{msg}");
    let msg = panic_message(|| x.flip(&[2]));
    assert!(msg.starts_with("flip:") && msg.contains("[3, 4]"), "{msg}");
    assert!(x.try_flip(&[1, 1]).is_err());

    let msg = panic_message(|| x.unfold(2, 1, 1, 0));
    assert!(
        msg.starts_with("unfold:") && msg.contains("[3, 4]"),
        "{msg}"
    );
    let img = Tensor::<f64>::zeros(&[1, 1, 3, 3]);
    let err = img.try_unfold(4, 1, 1, 0).unwrap_err();
    assert_eq!(err.op(), "unfold");
    assert!(img.try_unfold(4, 1, 1, 1).is_ok());
    assert!(img.try_unfold(2, 0, 1, 0).is_err());
    let cols = Tensor::<f64>::zeros(&[1, 4, 5]);
    let msg = panic_message(|| cols.fold(&[3, 3], 2, 1, 1, 0));
    assert!(
        msg.starts_with("fold:") && msg.contains("[1, 4, 5]") && msg.contains("[3, 3]"),
        "{msg}"
    );
    let err = Tensor::<f64>::zeros(&[1, 5, 4])
        .try_fold(&[3, 3], 2, 1, 1, 0)
        .unwrap_err();
    assert!(
        err.op() == "fold" && err.message().contains("[1, 5, 4]"),
        "{err}"
    );
}
