//! Broadcasting copies (`broadcast_to`, the VJP of a full reduction) and their adjoint
//! `sum_to_shape`, against results written out element by element: one repeated value, rows,
//! columns, leading, inner and trailing axes, empty tensors, and operands that are not in
//! standard layout.

use rune_runtime::__private::rules;
use rune_runtime::{sum_to_shape, Tensor};

/// `g` summed to `shape` the slow, obvious way: every element of `g` added into the element of
/// the result it broadcast from.
fn reference(g: &Tensor<f64>, shape: &[usize]) -> Vec<f64> {
    let gs = g.shape().to_vec();
    let lead = gs.len() - shape.len();
    let mut out = vec![0.0; shape.iter().product()];
    let values = g.to_vec();
    for (flat, &v) in values.iter().enumerate() {
        let index = unravel(flat, &gs);
        let mut target = 0;
        for (axis, &len) in shape.iter().enumerate() {
            let i = if len == 1 { 0 } else { index[lead + axis] };
            target = target * len + i;
        }
        out[target] += v;
    }
    out
}

/// The index of element `flat` of a row-major tensor of `shape`.
fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for axis in (0..shape.len()).rev() {
        index[axis] = flat % shape[axis];
        flat /= shape[axis];
    }
    index
}

fn numbered(shape: &[usize]) -> Tensor<f64> {
    let n = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| (i as f64 * 0.37).sin()).collect(), shape)
}

fn assert_close(got: &Tensor<f64>, shape: &[usize], want: &[f64]) {
    assert_eq!(got.shape(), shape);
    for (a, b) in got.to_vec().iter().zip(want) {
        assert!((a - b).abs() <= 1e-12, "{got:?} vs {want:?}");
    }
}

#[test]
fn sums_every_kind_of_broadcast_axis() {
    let cases: &[(&[usize], &[usize])] = &[
        (&[64, 10], &[10]),
        (&[64, 10], &[1, 10]),
        (&[2, 3, 4], &[4]),
        (&[2, 3, 4], &[3, 4]),
        (&[2, 3, 4], &[1, 1, 4]),
        (&[2, 3, 4], &[]),
        (&[2, 3, 4], &[1]),
        (&[2, 3, 4], &[3, 1]),
        (&[2, 3, 4], &[2, 1, 4]),
        (&[2, 3, 4], &[2, 3, 1]),
        (&[1, 3], &[3]),
        (&[5, 1, 3], &[1, 3]),
        (&[0, 3], &[3]),
        (&[3, 0], &[0]),
    ];
    for &(gs, shape) in cases {
        let g = numbered(gs);
        assert_close(&sum_to_shape(&g, shape), shape, &reference(&g, shape));
    }
}

#[test]
fn sums_gradients_that_are_not_in_standard_layout() {
    // A transposed gradient: [3, 4] seen as [4, 3].
    let g = numbered(&[3, 4]).permute(&[1, 0]);
    assert_eq!(g.shape(), &[4, 3]);
    for shape in [&[3][..], &[4, 1][..], &[1, 3][..]] {
        assert_close(&sum_to_shape(&g, shape), shape, &reference(&g, shape));
    }
}

#[test]
fn equal_shapes_share_storage() {
    // More elements than a tensor holds inline, whose clones are copies.
    let g = numbered(&[8, 8]);
    let same = sum_to_shape(&g, &[8, 8]);
    assert!(same.view().as_ptr() == g.view().as_ptr());
}

#[test]
#[should_panic(expected = "does not broadcast")]
fn a_shape_that_does_not_broadcast_panics() {
    let _ = sum_to_shape(&numbered(&[2, 3]), &[2]);
}

/// `t` broadcast to `shape` element by element: each result index read from `t` with the
/// broadcast axes pinned to 0.
fn broadcast_reference(t: &Tensor<f64>, shape: &[usize]) -> Vec<f64> {
    let ts = t.shape().to_vec();
    let lead = shape.len() - ts.len();
    let values = t.to_vec();
    let n: usize = shape.iter().product();
    (0..n)
        .map(|flat| {
            let index = unravel(flat, shape);
            let mut source = 0;
            for (axis, &len) in ts.iter().enumerate() {
                let i = if len == 1 { 0 } else { index[lead + axis] };
                source = source * len + i;
            }
            values[source]
        })
        .collect()
}

#[test]
fn broadcast_to_copies_every_kind_of_broadcast() {
    let cases: &[(&[usize], &[usize])] = &[
        (&[], &[5]),
        (&[], &[2, 3]),
        (&[1], &[4]),
        (&[1, 1], &[3, 2]),
        (&[3], &[2, 3]),
        (&[2, 1], &[2, 3]),
        (&[1, 3], &[4, 2, 3]),
        (&[2, 1, 3], &[2, 4, 3]),
        (&[3], &[0, 3]),
        (&[], &[0]),
    ];
    for &(ts, shape) in cases {
        let t = numbered(ts);
        let b = t.broadcast_to(shape);
        assert_eq!(b.shape(), shape);
        assert_eq!(
            b.to_vec(),
            broadcast_reference(&t, shape),
            "{ts:?} -> {shape:?}"
        );
    }
}

#[test]
fn broadcast_to_copies_a_transposed_operand() {
    let t = numbered(&[3, 2]).permute(&[1, 0]);
    let b = t.broadcast_to(&[4, 2, 3]);
    assert_eq!(b.to_vec(), broadcast_reference(&t, &[4, 2, 3]));
}

#[test]
fn full_reduction_vjps_fill_the_input_shape() {
    let g = Tensor::scalar(0.5f64);
    assert_eq!(rules::sum_vjp(&g, &[2, 3]).to_vec(), vec![0.5; 6]);
    assert_eq!(rules::mean_vjp(&g, &[2, 3]).to_vec(), vec![0.5 / 6.0; 6]);
    let rows = rules::sum_axes_vjp(
        &Tensor::from_vec(vec![1.0, 2.0], &[2]),
        &[2, 3],
        &[1],
        false,
    );
    assert_eq!(rows.to_vec(), vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0]);
    // 0-d and empty inputs.
    let one = rules::sum_vjp(&g, &[]);
    assert_eq!((one.shape(), one.item()), (&[] as &[usize], 0.5));
    assert_eq!(rules::mean_vjp(&g, &[]).item(), 0.5);
    assert_eq!(rules::sum_vjp(&g, &[0, 3]).shape(), &[0, 3]);
    assert_eq!(rules::mean_vjp(&g, &[3, 0]).shape(), &[3, 0]);
}

#[test]
#[should_panic(expected = "sum_vjp")]
fn a_full_reduction_vjp_rejects_a_cotangent_with_axes() {
    let _ = rules::sum_vjp(&Tensor::from_vec(vec![1.0f64], &[1]), &[2, 3]);
}

#[test]
fn zero_dimensional_shapes_compare_equal_to_empty_slices() {
    let s = Tensor::scalar(1.0f64);
    // An empty Vec or literal as the target shape: the same tensor comes back.
    let empty: Vec<usize> = Vec::new();
    assert_eq!(sum_to_shape(&s, &empty).item(), 1.0);
    assert_eq!(sum_to_shape(&s, &[]).item(), 1.0);
    assert_eq!(s.reshape(&empty).shape(), &[] as &[usize]);
    assert_eq!(s.broadcast_to(&[]).item(), 1.0);
}

/// `a - b` broadcast, element by element through the indices: the value at each output index
/// read from each operand at the index it broadcasts from.
fn difference_by_indices(a: &Tensor<f64>, b: &Tensor<f64>, shape: &[usize]) -> Vec<f64> {
    let read = |t: &Tensor<f64>, index: &[usize]| {
        let lead = shape.len() - t.ndim();
        let at: Vec<usize> = t
            .shape()
            .iter()
            .enumerate()
            .map(|(k, &len)| if len == 1 { 0 } else { index[lead + k] })
            .collect();
        t.view()[at.as_slice()]
    };
    let n: usize = shape.iter().product();
    (0..n)
        .map(|flat| {
            let index = unravel(flat, shape);
            read(a, &index) - read(b, &index)
        })
        .collect()
}

/// The same values laid out otherwise: reversed along every axis, or transposed.
fn laid_out(t: &Tensor<f64>, how: &str) -> Tensor<f64> {
    use rune_runtime::ndarray::{Axis, ShapeBuilder};
    let view = t.view();
    let array = match how {
        "reversed" => {
            let mut reversed = view.to_owned();
            for axis in 0..t.ndim() {
                reversed.invert_axis(Axis(axis));
            }
            let mut stored = reversed.as_standard_layout().into_owned();
            for axis in 0..t.ndim() {
                stored.invert_axis(Axis(axis));
            }
            stored
        }
        "transposed" => rune_runtime::ndarray::ArrayD::from_shape_vec(
            rune_runtime::ndarray::IxDyn(t.shape()).f(),
            view.t().iter().copied().collect(),
        )
        .expect("the element count fits"),
        _ => view.to_owned(),
    };
    Tensor::from_array(array)
}

#[test]
fn broadcast_binary_ops_read_every_operand_at_its_broadcast_index() {
    // Pairwise differences of points, bias rows and columns, outer products of axes, a
    // broadcast in the middle, scalars against tensors, short and long runs.
    let cases: &[(&[usize], &[usize])] = &[
        (&[50, 1, 3], &[1, 50, 3]),
        (&[7, 1, 2], &[1, 9, 2]),
        (&[64, 1, 1], &[1, 70, 1]),
        (&[5, 1, 100], &[1, 4, 100]),
        (&[3, 1, 4, 1], &[1, 5, 1, 6]),
        (&[2, 3, 1, 5], &[3, 4, 5]),
        (&[6, 1], &[1, 200]),
        (&[1, 200], &[6, 1]),
        (&[4, 1, 3], &[3]),
        (&[10, 1], &[10, 10]),
        (&[], &[3, 1, 2]),
        (&[1], &[2, 2]),
        (&[0, 1, 3], &[1, 4, 3]),
    ];
    for &(sa, sb) in cases {
        let shape = rune_runtime::broadcast_shapes("sub", sa, sb).expect("the shapes broadcast");
        for how_a in ["standard", "reversed", "transposed"] {
            for how_b in ["standard", "reversed", "transposed"] {
                let a = laid_out(&numbered(sa), how_a);
                let b = laid_out(&(numbered(sb) * 2.0 + 0.5), how_b);
                let want = difference_by_indices(&a, &b, &shape);
                let got = &a - &b;
                assert_eq!(
                    got.shape(),
                    shape.as_slice(),
                    "{sa:?} {how_a} - {sb:?} {how_b}"
                );
                assert_eq!(got.to_vec(), want, "{sa:?} {how_a} - {sb:?} {how_b}");
                let got = &b - &a;
                let negated: Vec<f64> = want.iter().map(|v| -v).collect();
                assert_eq!(got.to_vec(), negated, "{sb:?} {how_b} - {sa:?} {how_a}");
                assert!(got.is_standard_layout());
            }
        }
    }
}
