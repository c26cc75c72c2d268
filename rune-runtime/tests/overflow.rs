//! Huge or degenerate geometry: every `try_` op returns a `ShapeError` naming the op and its
//! arguments (never an arithmetic-overflow panic, never a meaningless `Ok`), and the panicking
//! twin panics with the same message. The checks use checked arithmetic, so debug (these tests)
//! and release builds agree.

mod support;

use support::panic_message;

use rune_runtime::{add, concat, stack, try_add, try_concat, try_stack, ShapeError, Tensor};

const MAX: usize = usize::MAX;
/// The longest axis of `f64`s a tensor may have (its bytes fit in `isize`).
const LONG: usize = isize::MAX as usize / 8;

/// Checks that `r` is an error of `op` whose message holds each of `parts`, and that the
/// panicking twin `p` panics with exactly that message.
#[track_caller]
fn expect_err<R: std::fmt::Debug, S>(
    op: &str,
    r: Result<R, ShapeError>,
    p: impl FnOnce() -> S,
    parts: &[&str],
) {
    let e = r.expect_err("expected an error");
    let text = e.to_string();
    assert_eq!(e.op(), op, "{text}");
    assert!(text.starts_with(&format!("{op}: ")), "{text}");
    for part in parts {
        assert!(text.contains(part), "{text:?} should contain {part:?}");
    }
    assert_eq!(panic_message(p), text);
}

fn image(h: usize, w: usize) -> Tensor<f64> {
    Tensor::from_vec((0..h * w).map(|i| i as f64).collect(), &[1, 1, h, w])
}

#[test]
fn from_vec_rejects_a_shape_whose_product_overflows() {
    let shape = [MAX, 2];
    expect_err(
        "from_vec",
        Tensor::<f64>::try_from_vec(vec![], &shape),
        || Tensor::<f64>::from_vec(vec![], &shape),
        &[
            "[18446744073709551615, 2]",
            "more elements than a tensor can hold",
        ],
    );
    // The product wraps to 0 in release arithmetic: it must not pass for an empty tensor.
    let wraps = [1usize << 32, 1 << 32];
    expect_err(
        "from_vec",
        Tensor::<f64>::try_from_vec(vec![], &wraps),
        || Tensor::<f64>::from_vec(vec![], &wraps),
        &["[4294967296, 4294967296]"],
    );
    // A zero axis makes any other length hold nothing, within ndarray's bound.
    assert_eq!(
        Tensor::<f64>::try_from_vec(vec![], &[0, LONG])
            .unwrap()
            .shape(),
        &[0, LONG]
    );
    expect_err(
        "from_vec",
        Tensor::<f64>::try_from_vec(vec![], &[0, MAX]),
        || Tensor::<f64>::from_vec(vec![], &[0, MAX]),
        &["[0, 18446744073709551615]"],
    );
}

#[test]
fn constructors_reject_shapes_that_overflow() {
    let shape = [MAX, MAX];
    let parts = ["[18446744073709551615, 18446744073709551615]"];
    expect_err(
        "zeros",
        Tensor::<f64>::try_zeros(&shape),
        || Tensor::<f64>::zeros(&shape),
        &parts,
    );
    expect_err(
        "ones",
        Tensor::<f64>::try_ones(&shape),
        || Tensor::<f64>::ones(&shape),
        &parts,
    );
    expect_err(
        "full",
        Tensor::try_full(&shape, 1.0),
        || Tensor::full(&shape, 1.0),
        &parts,
    );
    expect_err(
        "rand_uniform",
        Tensor::try_rand_uniform(&shape, 0.0, 1.0, 7),
        || Tensor::rand_uniform(&shape, 0.0, 1.0, 7),
        &parts,
    );
    expect_err(
        "rand_normal",
        Tensor::try_rand_normal(&shape, 0.0, 1.0, 7),
        || Tensor::rand_normal(&shape, 0.0, 1.0, 7),
        &parts,
    );
    // Within the bound in elements, beyond it in bytes.
    expect_err(
        "zeros",
        Tensor::<f64>::try_zeros(&[LONG + 1]),
        || Tensor::<f64>::zeros(&[LONG + 1]),
        &["more elements than a tensor can hold"],
    );
    assert_eq!(Tensor::<f64>::try_zeros(&[2, 3]).unwrap().shape(), &[2, 3]);
}

#[test]
fn arange_rejects_more_elements_than_a_tensor_holds() {
    expect_err(
        "arange",
        Tensor::<f64>::try_arange(MAX),
        || Tensor::<f64>::arange(MAX),
        &["n = 18446744073709551615"],
    );
    assert_eq!(
        Tensor::<i64>::try_arange(3).unwrap().to_vec(),
        vec![0, 1, 2]
    );
}

#[test]
fn pad_rejects_padding_that_overflows() {
    let x = Tensor::from_vec(vec![1.0, 2.0], &[2]);
    expect_err(
        "pad",
        x.try_pad(&[(MAX, 0)], 0.0),
        || x.pad(&[(MAX, 0)], 0.0),
        &[
            "padding (18446744073709551615, 0) of axis 0 (length 2)",
            "overflows",
        ],
    );
    expect_err(
        "pad",
        x.try_pad(&[(MAX - 2, 1)], 0.0),
        || x.pad(&[(MAX - 2, 1)], 0.0),
        &["overflows"],
    );
    // The padded length fits in usize but not in a tensor.
    expect_err(
        "pad",
        x.try_pad(&[(MAX / 2, 0)], 0.0),
        || x.pad(&[(MAX / 2, 0)], 0.0),
        &[
            "padding [(9223372036854775807, 0)] of shape [2]",
            "more elements",
        ],
    );
    assert_eq!(
        x.try_pad(&[(1, 2)], 0.0).unwrap().to_vec(),
        vec![0.0, 1.0, 2.0, 0.0, 0.0]
    );
}

#[test]
fn shrink_rejects_huge_ranges() {
    let x = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    expect_err(
        "shrink",
        x.try_shrink(&[(1, MAX)]),
        || x.shrink(&[(1, MAX)]),
        &["range 1..18446744073709551615 is out of bounds for axis 0"],
    );
    expect_err(
        "shrink",
        x.try_shrink(&[(MAX, MAX)]),
        || x.shrink(&[(MAX, MAX)]),
        &["out of bounds"],
    );
}

#[test]
fn unfold_rejects_huge_or_degenerate_geometry() {
    let x = image(3, 3);
    expect_err(
        "unfold",
        x.try_unfold(2, 1, 1, MAX),
        || x.unfold(2, 1, 1, MAX),
        &["padding 18446744073709551615", "overflows"],
    );
    expect_err(
        "unfold",
        x.try_unfold(2, 0, 1, 0),
        || x.unfold(2, 0, 1, 0),
        &["stride (0)", "must be at least 1"],
    );
    expect_err(
        "unfold",
        x.try_unfold(4, 1, 1, 0),
        || x.unfold(4, 1, 1, 0),
        &["spans 4 positions, more than the padded spatial size 3x3"],
    );
    expect_err(
        "unfold",
        x.try_unfold(3, 1, MAX, 0),
        || x.unfold(3, 1, MAX, 0),
        &["dilation 18446744073709551615", "overflows"],
    );
    // Padding that fits, but leaves more window positions than usize counts.
    expect_err(
        "unfold",
        x.try_unfold(1, 1, 1, MAX / 4),
        || x.unfold(1, 1, 1, MAX / 4),
        &["window positions", "overflows"],
    );
    // A huge kernel on huge padding: kernel*kernel overflows.
    expect_err(
        "unfold",
        x.try_unfold(1 << 33, MAX, 1, 1 << 33),
        || x.unfold(1 << 33, MAX, 1, 1 << 33),
        &["kernel*kernel for kernel 8589934592", "overflows"],
    );
}

#[test]
fn unfold_with_a_stride_past_the_input_gives_one_window() {
    let x = image(3, 3);
    // Any stride of at least the padded size leaves one window; a huge one gives the same.
    let small = x.try_unfold(2, 5, 1, 1).unwrap();
    let huge = x.try_unfold(2, MAX, 1, 1).unwrap();
    assert_eq!(huge.shape(), &[1, 4, 1]);
    assert_eq!(huge.to_vec(), small.to_vec());
    assert_eq!(huge.to_vec(), vec![0.0, 0.0, 0.0, 0.0]);
    let g = huge.try_fold(&[3, 3], 2, MAX, 1, 1).unwrap();
    assert_eq!(
        g.to_vec(),
        x.try_unfold(2, 5, 1, 1)
            .unwrap()
            .fold(&[3, 3], 2, 5, 1, 1)
            .to_vec()
    );
}

#[test]
fn fold_rejects_huge_or_degenerate_geometry() {
    let cols = Tensor::<f64>::zeros(&[1, 4, 4]);
    expect_err(
        "fold",
        cols.try_fold(&[3, 3], 2, 1, 1, MAX),
        || cols.fold(&[3, 3], 2, 1, 1, MAX),
        &["padding 18446744073709551615", "overflows"],
    );
    expect_err(
        "fold",
        cols.try_fold(&[3, 3], 2, 0, 1, 0),
        || cols.fold(&[3, 3], 2, 0, 1, 0),
        &["stride (0)"],
    );
    expect_err(
        "fold",
        cols.try_fold(&[3, 3], 1 << 32, 1, 1, 0),
        || cols.fold(&[3, 3], 1 << 32, 1, 1, 0),
        &["kernel*kernel for kernel 4294967296", "overflows"],
    );
    expect_err(
        "fold",
        cols.try_fold(&[1, 1], 2, 1, 1, 0),
        || cols.fold(&[1, 1], 2, 1, 1, 0),
        &["spans 2 positions, more than the padded spatial size 1x1"],
    );
    // An output size whose product overflows (no positions, so L = 0 must match).
    let empty = Tensor::<f64>::zeros(&[1, 1, 0]);
    expect_err(
        "fold",
        empty.try_fold(&[MAX, MAX], 1, MAX, 1, 0),
        || empty.fold(&[MAX, MAX], 1, MAX, 1, 0),
        &["output_size [18446744073709551615, 18446744073709551615]"],
    );
}

#[test]
fn conv2d_rejects_huge_or_degenerate_geometry() {
    let x = image(3, 3);
    let w = Tensor::<f64>::ones(&[1, 1, 2, 2]);
    expect_err(
        "conv2d",
        x.try_conv2d(&w, 1, MAX),
        || x.conv2d(&w, 1, MAX),
        &["padded by 18446744073709551615", "overflows"],
    );
    expect_err(
        "conv2d",
        x.try_conv2d(&w, 0, 0),
        || x.conv2d(&w, 0, 0),
        &["stride must be positive"],
    );
    let big = Tensor::<f64>::ones(&[1, 1, 4, 4]);
    expect_err(
        "conv2d",
        x.try_conv2d(&big, 1, 0),
        || x.conv2d(&big, 1, 0),
        &["kernel 4x4 of weight [1, 1, 4, 4] is larger than input [1, 1, 3, 3]"],
    );
    // Padding that fits, but an output of more elements than usize counts.
    expect_err(
        "conv2d",
        x.try_conv2d(&w, 1, MAX / 4),
        || x.conv2d(&w, 1, MAX / 4),
        &[
            "padding 4611686018427387903",
            "more elements than a tensor can hold",
        ],
    );
    // A stride past the padded input leaves one output position: the padding's corner.
    let y = x.try_conv2d(&w, MAX, MAX / 4).unwrap();
    assert_eq!(y.shape(), &[1, 1, 1, 1]);
    assert_eq!(y.to_vec(), vec![0.0]);
    assert_eq!(x.try_conv2d(&w, MAX, 0).unwrap().to_vec(), vec![8.0]);
}

#[test]
fn pooling_rejects_huge_or_degenerate_geometry() {
    let x = image(3, 3);
    for (op, r, p) in [
        (
            "max_pool2d",
            x.try_max_pool2d(MAX, 1),
            Box::new(|| x.max_pool2d(MAX, 1)) as Box<dyn FnOnce() -> Tensor<f64>>,
        ),
        (
            "avg_pool2d",
            x.try_avg_pool2d(MAX, 1),
            Box::new(|| x.avg_pool2d(MAX, 1)),
        ),
    ] {
        expect_err(
            op,
            r,
            p,
            &["kernel 18446744073709551615x18446744073709551615 is larger"],
        );
    }
    expect_err(
        "max_pool2d",
        x.try_max_pool2d(2, 0),
        || x.max_pool2d(2, 0),
        &["stride (0) must be positive"],
    );
    expect_err(
        "avg_pool2d",
        x.try_avg_pool2d(2, 0),
        || x.avg_pool2d(2, 0),
        &["stride (0) must be positive"],
    );
    assert_eq!(x.try_max_pool2d(2, MAX).unwrap().to_vec(), vec![4.0]);
    assert_eq!(x.try_avg_pool2d(2, MAX).unwrap().to_vec(), vec![2.0]);
}

#[test]
fn reshape_rejects_shapes_that_overflow() {
    let x = Tensor::from_vec(vec![1.0; 4], &[4]);
    expect_err(
        "reshape",
        x.try_reshape(&[1usize << 32, 1 << 32, 4]),
        || x.reshape(&[1usize << 32, 1 << 32, 4]),
        &["into shape [4294967296, 4294967296, 4] (too many elements)"],
    );
    let empty = Tensor::<f64>::zeros(&[0]);
    expect_err(
        "reshape",
        empty.try_reshape(&[0, MAX, MAX]),
        || empty.reshape(&[0, MAX, MAX]),
        &["too many elements"],
    );
    assert_eq!(empty.try_reshape(&[0, LONG]).unwrap().shape(), &[0, LONG]);
}

#[test]
fn broadcast_to_rejects_shapes_that_overflow() {
    let x = Tensor::from_vec(vec![1.0], &[1]);
    expect_err(
        "broadcast_to",
        x.try_broadcast_to(&[MAX, MAX]),
        || x.broadcast_to(&[MAX, MAX]),
        &[
            "broadcasting shape [1]",
            "[18446744073709551615, 18446744073709551615]",
        ],
    );
    expect_err(
        "broadcast_to",
        x.try_broadcast_to(&[LONG + 1]),
        || x.broadcast_to(&[LONG + 1]),
        &["more elements than a tensor can hold"],
    );
}

#[test]
fn concat_rejects_lengths_that_overflow() {
    let a = Tensor::<f64>::zeros(&[0, LONG]);
    let parts = [&a, &a];
    expect_err(
        "concat",
        try_concat(&parts, 1),
        || concat(&parts, 1),
        &["concatenating shapes [[0, 1152921504606846975], [0, 1152921504606846975]]"],
    );
    let many = vec![&a; 17];
    expect_err(
        "concat",
        try_concat(&many, 1),
        || concat(&many, 1),
        &["the total length of axis 1", "overflows"],
    );
}

#[test]
fn stack_rejects_counts_that_overflow() {
    let a = Tensor::<f64>::zeros(&[0, LONG]);
    let parts = [&a, &a];
    expect_err(
        "stack",
        try_stack(&parts, 0),
        || stack(&parts, 0),
        &["stacking 2 tensors of shape [0, 1152921504606846975]"],
    );
}

#[test]
fn matmul_rejects_a_product_that_overflows() {
    // Operands of no elements (a zero-length contraction) with a product of very many.
    let a = Tensor::<f64>::zeros(&[LONG, 0]);
    let b = Tensor::<f64>::zeros(&[0, LONG]);
    expect_err(
        "matmul",
        a.try_matmul(&b),
        || a.matmul(&b),
        &[
            "the product of shapes [1152921504606846975, 0] and [0, 1152921504606846975]",
            "more elements than a tensor can hold",
        ],
    );
}

#[test]
fn broadcasting_ops_reject_a_result_that_overflows() {
    let a = Tensor::<f64>::zeros(&[0, LONG, 1]);
    let b = Tensor::<f64>::zeros(&[1, 16]);
    expect_err(
        "add",
        try_add(&a, &b),
        || add(&a, &b),
        &[
            "broadcasting shapes [0, 1152921504606846975, 1] and [1, 16]",
            "more elements",
        ],
    );
}
