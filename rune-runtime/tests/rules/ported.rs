//! The ops named as PyTorch names them: `index_select`, `embedding`, `masked_fill`,
//! `transpose`, `reshape` with a `-1`, `layer_norm`.

use rune_runtime::__private::rules::*;
use rune_runtime::{embedding, Element, Tensor};

use crate::common::{assert_close, panic_message, tensor, uniform, Case};

fn idx(values: &[i64], shape: &[usize]) -> Tensor<i64> {
    Tensor::from_vec(values.to_vec(), shape)
}

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    // index_select: (data shape, axis, indices), repeated indices, a negative axis, an index
    // list longer than the axis, as a tensor.
    let selects: [(&[usize], isize, Tensor<i64>); 3] = [
        (&[4, 3], 0, idx(&[2, 0, 2, 3, 2], &[5])),
        (&[2, 3, 4], -1, idx(&[3, 3, 1], &[3])),
        (&[2, 3, 4], 1, idx(&[1], &[1])),
    ];
    for (i, (shape, axis, indices)) in selects.into_iter().enumerate() {
        let (i1, i2, i3) = (indices.clone(), indices.clone(), indices);
        cases.push(Case::new(
            "index_select",
            "along an axis, a Tensor<i64>",
            vec![uniform::<T>(shape, -2.0, 2.0, 7000 + i as u64)],
            move |x| x[0].index_select(axis, &i1),
            move |_, t| index_select_jvp(axis, &i2, &t[0]),
            move |x, g| vec![index_select_vjp(g, x[0].shape(), axis, &i3)],
        ));
    }
    cases.push(Case::new(
        "index_select",
        "a list of usize",
        vec![uniform::<T>(&[3, 2], -2.0, 2.0, 7010)],
        |x| x[0].index_select(0, &[1usize, 1, 0, 1]),
        |_, t| index_select_jvp(0, &[1usize, 1, 0, 1], &t[0]),
        |x, g| vec![index_select_vjp(g, x[0].shape(), 0, &[1usize, 1, 0, 1])],
    ));

    // embedding: 2-D ids with a repeated row, 1-D ids, 0-d ids.
    let lookups: [Tensor<i64>; 3] = [
        idx(&[3, 0, 3, 1, 3, 2], &[2, 3]),
        idx(&[1, 1], &[2]),
        idx(&[2], &[]),
    ];
    for (i, ids) in lookups.into_iter().enumerate() {
        let (i1, i2, i3) = (ids.clone(), ids.clone(), ids);
        cases.push(Case::new(
            "embedding",
            "rows of a [4, 3] weight",
            vec![uniform::<T>(&[4, 3], -2.0, 2.0, 7020 + i as u64)],
            move |w| embedding(&i1, &w[0]),
            move |_, t| embedding_jvp(&i2, &t[0]),
            move |w, g| vec![embedding_vjp(g, w[0].shape(), &i3)],
        ));
    }

    // masked_fill: a mask of the tensor's shape, one broadcasting along rows, one broadcasting
    // the tensor up.
    let masks: [(&[usize], Tensor<bool>); 3] = [
        (
            &[2, 3],
            Tensor::from_vec(vec![true, false, false, true, true, false], &[2, 3]),
        ),
        (&[2, 3], Tensor::from_vec(vec![false, true, false], &[3])),
        (
            &[3],
            Tensor::from_vec(vec![true, false, false, false, true, false], &[2, 3]),
        ),
    ];
    for (i, (shape, mask)) in masks.into_iter().enumerate() {
        let (m1, m2, m3) = (mask.clone(), mask.clone(), mask);
        cases.push(Case::new(
            "masked_fill",
            "constant where the mask is set",
            vec![uniform::<T>(shape, -2.0, 2.0, 7030 + i as u64)],
            move |x| x[0].masked_fill(&m1, -1.5),
            move |_, t| masked_fill_jvp(&m2, &t[0]),
            move |x, g| vec![masked_fill_vjp(g, &m3, x[0].shape())],
        ));
    }

    // transpose: two axes of a 3-D tensor, negative axes, an axis with itself.
    for (i, (a, b)) in [(0isize, 2isize), (-1, -2), (1, 1)].into_iter().enumerate() {
        cases.push(Case::new(
            "transpose",
            "two axes swapped",
            vec![uniform::<T>(&[2, 3, 4], -2.0, 2.0, 7040 + i as u64)],
            move |x| x[0].transpose(a, b),
            move |_, t| transpose_jvp(a, b, &t[0]),
            move |_, g| vec![transpose_vjp(g, a, b)],
        ));
    }

    // reshape with a -1, of a row-major tensor and of a transposed one.
    cases.push(Case::new(
        "reshape",
        "[2,3,4] -> [-1, 4] (signed)",
        vec![uniform::<T>(&[2, 3, 4], -2.0, 2.0, 7050)],
        |x| x[0].reshape(&[-1, 4]),
        |_, t| reshape_jvp(&[-1, 4], &t[0]),
        |x, g| vec![reshape_vjp(g, x[0].shape())],
    ));
    cases.push(Case::new(
        "reshape",
        "[4,3]ᵀ -> [2, -1] (i64)",
        vec![uniform::<T>(&[4, 3], -2.0, 2.0, 7051)],
        |x| x[0].t().reshape(&[2i64, -1]),
        |_, t| reshape_jvp(&[2i64, -1], &t[0].t()),
        |x, g| vec![reshape_vjp(g, &[3, 4]).t().reshape(x[0].shape())],
    ));

    // layer_norm over the last axis and over the last two; a large eps so that it matters.
    let norms: [(&[usize], &'static [usize], f64); 3] = [
        (&[3, 4], &[4], 1e-5),
        (&[2, 3, 4], &[3, 4], 1e-5),
        (&[2, 5], &[5], 0.5),
    ];
    for (i, (shape, normalized, eps)) in norms.into_iter().enumerate() {
        let e = T::from_f64(eps);
        cases.push(Case::new(
            "layer_norm",
            "over the last axes",
            vec![uniform::<T>(shape, -2.0, 2.0, 7060 + i as u64)],
            move |x| x[0].layer_norm(normalized, eps),
            move |x, t| {
                let y = x[0].layer_norm(normalized, e);
                layer_norm_jvp(&x[0], &y, normalized, e, &t[0])
            },
            move |x, g| {
                let y = x[0].layer_norm(normalized, e);
                vec![layer_norm_vjp(g, &x[0], &y, normalized, e)]
            },
        ));
    }
    cases
}

#[test]
fn index_select_and_embedding_match_torch() {
    // torch.index_select(x, 0, [2, 0, 2]) and along dim 1.
    let x = Tensor::<f64>::arange(12).reshape(&[3, 4]);
    let rows = x.index_select(0, &idx(&[2, 0, 2], &[3]));
    assert_eq!(rows.shape(), &[3, 4]);
    assert_close(
        &rows,
        &[8., 9., 10., 11., 0., 1., 2., 3., 8., 9., 10., 11.],
        0.0,
    );
    let cols = x.index_select(-1, &[3, 0]);
    assert_eq!(cols.shape(), &[3, 2]);
    assert_close(&cols, &[3., 0., 7., 4., 11., 8.], 0.0);
    assert_eq!(x.index_select(1, &Vec::<usize>::new()).shape(), &[3, 0]);
    // A transposed (not row-major) source, and its gradient from a transposed cotangent:
    // x.t()[i][j] = x[j][i].
    let picked = x.t().index_select(0, &[1, 3]);
    assert_close(&picked, &[1., 5., 9., 3., 7., 11.], 0.0);
    let g = Tensor::<f64>::arange(6).reshape(&[3, 2]).t();
    let gx = index_select_vjp(&g, &[4, 3], 0, &[1, 3]);
    assert_close(&gx, &[0., 0., 0., 0., 2., 4., 0., 0., 0., 1., 3., 5.], 0.0);
    // F.embedding(ids, weight): ids of any shape, result ids.shape + [dim].
    let w = Tensor::<f64>::arange(6).reshape(&[3, 2]);
    let e = embedding(&idx(&[2, 0, 1, 2], &[2, 2]), &w);
    assert_eq!(e.shape(), &[2, 2, 2]);
    assert_close(&e, &[4., 5., 0., 1., 2., 3., 4., 5.], 0.0);
    assert_eq!(embedding(&[1, 1, 1], &w).shape(), &[3, 2]);
    // Rows long enough to be copied by `memcpy` (40 f64, 320 bytes) and short ones (2 f64),
    // and their gradients: element (i, j) of the selection is x[rows[i]][j].
    for width in [2usize, 40] {
        let x = Tensor::<f64>::arange(4 * width).reshape(&[4, width]);
        let rows = [3usize, 0, 3];
        let want: Vec<f64> = rows
            .iter()
            .flat_map(|&r| (0..width).map(move |j| (r * width + j) as f64))
            .collect();
        assert_close(&x.index_select(0, &rows), &want, 0.0);
        let g = Tensor::<f64>::ones(&[3, width]);
        let gx = index_select_vjp(&g, &[4, width], 0, &rows);
        let counts: Vec<f64> = (0..4 * width)
            .map(|k| [1.0, 0.0, 0.0, 2.0][k / width])
            .collect();
        assert_close(&gx, &counts, 0.0);
    }
}

#[test]
fn repeated_indices_accumulate_their_gradients() {
    // Row 2 read twice, row 1 never: its gradient is the sum of both cotangent rows.
    let g = tensor::<f64>(&[1., 2., 10., 20., 100., 200.], &[3, 2]);
    let gx = index_select_vjp(&g, &[3, 2], 0, &[2, 0, 2]);
    assert_close(&gx, &[10., 20., 0., 0., 101., 202.], 0.0);
    let gw = embedding_vjp(&g.reshape(&[3, 1, 2]), &[3, 2], &idx(&[2, 0, 2], &[3, 1]));
    assert_close(&gw, &[10., 20., 0., 0., 101., 202.], 0.0);
}

#[test]
fn masked_fill_transpose_and_inferred_reshape_values() {
    let x = tensor::<f64>(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let mask = Tensor::from_vec(vec![false, true, false], &[3]);
    assert_close(&x.masked_fill(&mask, 0.5), &[1., 0.5, 3., 4., 0.5, 6.], 0.0);
    let g = masked_fill_vjp(&Tensor::<f64>::ones(&[2, 3]), &mask, &[2, 3]);
    assert_close(&g, &[1., 0., 1., 1., 0., 1.], 0.0);
    // transpose(0, 1) of a matrix is its transpose; of [2, 3, 1] axes 0 and 2 give [1, 3, 2].
    assert_close(&x.transpose(0, -1), &[1., 4., 2., 5., 3., 6.], 0.0);
    let y = x.reshape(&[2, 3, 1]).transpose(0, 2);
    assert_eq!(y.shape(), &[1, 3, 2]);
    assert_close(&y, &[1., 4., 2., 5., 3., 6.], 0.0);
    // -1 takes the length that keeps the number of elements, in any position and type.
    assert_eq!(x.reshape(&[-1]).shape(), &[6]);
    assert_eq!(x.reshape(&[3, -1]).shape(), &[3, 2]);
    assert_eq!(x.reshape(&[-1isize, 1, 2]).shape(), &[3, 1, 2]);
    assert_eq!(x.reshape(&vec![1i64, -1, 3]).shape(), &[1, 2, 3]);
    assert_eq!(x.reshape(&[2, 3]).shape(), &[2, 3]);
    assert_close(&x.t().reshape(&[-1]), &[1., 4., 2., 5., 3., 6.], 0.0);
}

#[test]
fn layer_norm_by_hand() {
    // [1, 2, 3]: mean 2, biased variance 2/3, so y = [-1, 0, 1] / sqrt(2/3 + eps).
    let x = tensor::<f64>(&[1., 2., 3., 10., 10., 13.], &[2, 3]);
    let eps = 1e-3;
    let s = (2.0f64 / 3.0 + eps).sqrt();
    // [10, 10, 13]: mean 11, deviations [-1, -1, 2], variance 2.
    let s2 = (2.0f64 + eps).sqrt();
    let y = x.layer_norm(&[3], eps);
    assert_close(
        &y,
        &[-1. / s, 0., 1. / s, -1. / s2, -1. / s2, 2. / s2],
        1e-12,
    );
    // Shifting a row by a constant changes nothing: the all-ones direction has zero tangent.
    let dy = layer_norm_jvp(&x, &y, &[3], eps, &Tensor::ones(&[2, 3]));
    assert_close(&dy, &[0.; 6], 1e-12);
    // With c = y the VJP is the gradient of Σ y²/2 = N v / (2 (v + eps)) (v the variance,
    // whose gradient is 2 (x - μ) / N): eps (x - μ) / (v + eps)², [-eps, 0, eps] / s⁴ on the
    // first row.
    let g = layer_norm_vjp(&y, &x, &y, &[3], eps);
    let first: Vec<f64> = g.to_vec()[..3].to_vec();
    let want = [-eps / s.powi(4), 0.0, eps / s.powi(4)];
    for (a, b) in first.iter().zip(want) {
        assert!((a - b).abs() < 1e-12, "{first:?} vs {want:?}");
    }
}

#[test]
fn bad_input_names_the_op_and_shapes() {
    let x = Tensor::<f64>::zeros(&[2, 3]);
    let msg = panic_message(|| x.index_select(1, &[0, 3]));
    assert!(
        msg.starts_with("index_select:") && msg.contains("index 3") && msg.contains("[2, 3]"),
        "{msg}"
    );
    let err = x.try_index_select(0, &idx(&[0, 1], &[1, 2])).unwrap_err();
    assert!(
        err.op() == "index_select" && err.message().contains("[1, 2]"),
        "{err}"
    );
    assert_eq!(
        x.try_index_select(2, &[0]).unwrap_err().op(),
        "index_select"
    );
    let err = x.try_index_select(0, &[-1]).unwrap_err();
    assert!(err.message().contains("index -1"), "{err}");
    // Indices that are not row-major (a transpose) are read in their logical order, and
    // checked the same.
    let w = Tensor::<f64>::from_vec((0..6).map(f64::from).collect(), &[3, 2]);
    let strided = Tensor::<i64>::from_vec(vec![0, 1, 2, 0], &[2, 2]).t();
    assert!(strided.as_slice().is_none());
    assert_eq!(
        embedding(&strided, &w).to_vec(),
        [0.0, 1.0, 4.0, 5.0, 2.0, 3.0, 0.0, 1.0]
    );
    let bad = Tensor::<i64>::from_vec(vec![0, 1, 3, 0], &[2, 2]).t();
    let err = rune_runtime::try_embedding(&bad, &w).unwrap_err();
    assert!(err.message().contains("index 3"), "{err}");

    let msg = panic_message(|| embedding(&[0, 2], &x));
    assert!(
        msg.starts_with("embedding:") && msg.contains("index 2") && msg.contains("[2, 3]"),
        "{msg}"
    );
    let err = rune_runtime::try_embedding(&[0], &Tensor::<f64>::zeros(&[3])).unwrap_err();
    assert!(
        err.op() == "embedding" && err.message().contains("[3]"),
        "{err}"
    );

    let msg = panic_message(|| x.masked_fill(&Tensor::full(&[2], true), 0.0));
    assert!(
        msg.starts_with("masked_fill:") && msg.contains("[2]") && msg.contains("[2, 3]"),
        "{msg}"
    );

    let msg = panic_message(|| x.transpose(0, 2));
    assert!(
        msg.starts_with("transpose:") && msg.contains("axis 2") && msg.contains("[2, 3]"),
        "{msg}"
    );

    for (shape, why) in [
        (&[4, -1][..], "do not divide"),
        (&[-1, -1][..], "more than one -1"),
        (&[-2, -3][..], "negative"),
        (&[0, -1][..], "any length"),
    ] {
        let err = x.try_reshape(shape).unwrap_err();
        assert_eq!(err.op(), "reshape");
        let msg = err.message();
        assert!(
            msg.contains("[2, 3]") && msg.contains(&format!("{shape:?}")) && msg.contains(why),
            "{msg}"
        );
    }
    let msg = panic_message(|| x.reshape(&[5, -1]));
    assert!(
        msg.starts_with("reshape:") && msg.contains("[5, -1]"),
        "{msg}"
    );

    let msg = panic_message(|| x.layer_norm(&[2], 1e-5));
    assert!(
        msg.starts_with("layer_norm:") && msg.contains("[2]") && msg.contains("[2, 3]"),
        "{msg}"
    );
    assert!(x.try_layer_norm(&[], 1e-5).is_err());
    assert!(x.try_layer_norm(&[1, 2, 3], 1e-5).is_err());
}
