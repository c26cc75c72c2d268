//! `conv2d`, `max_pool2d` and `avg_pool2d` on NCHW tensors.

use rune_runtime::__private::rules::*;
use rune_runtime::{Element, Tensor};

use crate::common::{assert_close, panic_message, tensor, uniform, Case};

/// `(label, weight shape, stride, padding)` for an input of shape `[2, 2, 5, 4]`.
const CONVS: &[(&str, [usize; 4], usize, usize)] = &[
    ("3x2 kernel", [3, 2, 3, 2], 1, 0),
    ("stride 2, padding 1", [3, 2, 3, 2], 2, 1),
    ("padding 2", [3, 2, 3, 2], 1, 2),
    ("stride 3, padding 1, rounded down", [3, 2, 2, 3], 3, 1),
    ("1x1 kernel", [3, 2, 1, 1], 1, 0),
    ("1x1 kernel, stride 2", [3, 2, 1, 1], 2, 0),
    ("kernel covers the padded image", [3, 2, 7, 6], 1, 1),
];

/// `(label, kernel, stride)` for an input of shape `[2, 2, 5, 4]`.
const POOLS: &[(&str, usize, usize)] = &[
    ("2x2, stride 2, rounded down", 2, 2),
    ("3x3, stride 1, overlapping", 3, 1),
    ("2x2, stride 1, overlapping", 2, 1),
    ("3x3, stride 2", 3, 2),
];

const X_SHAPE: [usize; 4] = [2, 2, 5, 4];

/// Distinct values 0.1 apart in scrambled order, so that no window's maximum is near a tie
/// (finite differences are meaningless at a tie).
fn distinct<T: Element>(shape: &[usize]) -> Tensor<T> {
    let n: usize = shape.iter().product();
    assert!(!n.is_multiple_of(37));
    let values: Vec<f64> = (0..n).map(|i| ((i * 37) % n) as f64 * 0.1 - 2.0).collect();
    tensor(&values, shape)
}

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    for (i, &(label, w_shape, s, p)) in CONVS.iter().enumerate() {
        let x = uniform::<T>(&X_SHAPE, -1.0, 1.0, 900 + i as u64);
        let w = uniform::<T>(&w_shape, -1.0, 1.0, 950 + i as u64);
        cases.push(Case::new(
            "conv2d",
            label,
            vec![x, w],
            move |a| a[0].conv2d(&a[1], s, p),
            move |a, t| conv2d_jvp(&a[0], &a[1], s, p, Some(&t[0]), Some(&t[1])),
            move |a, g| {
                vec![
                    conv2d_vjp_input(g, a[0].shape(), &a[1], s, p),
                    conv2d_vjp_weight(g, &a[0], a[1].shape(), s, p),
                ]
            },
        ));
    }
    // Eight input channels or more, stride 1, a square kernel padded by less than its size:
    // the input's VJP is the convolution of the cotangent with the flipped kernel. A 2x3 kernel
    // and a padding as large as the kernel take the general rule.
    for (i, &(label, w_shape, p)) in [
        ("8 channels, 3x3, padding 1", [3, 8, 3, 3], 1),
        ("8 channels, 3x3, no padding", [3, 8, 3, 3], 0),
        ("8 channels, 2x2, padding 1", [2, 8, 2, 2], 1),
        ("8 channels, 2x3, padding 1", [2, 8, 2, 3], 1),
        ("8 channels, 2x2, padding 2", [2, 8, 2, 2], 2),
    ]
    .iter()
    .enumerate()
    {
        let x = uniform::<T>(&[2, 8, 5, 4], -1.0, 1.0, 960 + i as u64);
        let w = uniform::<T>(&w_shape, -1.0, 1.0, 970 + i as u64);
        cases.push(Case::new(
            "conv2d",
            label,
            vec![x, w],
            move |a| a[0].conv2d(&a[1], 1, p),
            move |a, t| conv2d_jvp(&a[0], &a[1], 1, p, Some(&t[0]), Some(&t[1])),
            move |a, g| {
                vec![
                    conv2d_vjp_input(g, a[0].shape(), &a[1], 1, p),
                    conv2d_vjp_weight(g, &a[0], a[1].shape(), 1, p),
                ]
            },
        ));
    }
    // One operand constant: each JVP with a `None` tangent, each VJP on its own.
    let w = uniform::<T>(&[3, 2, 2, 3], -1.0, 1.0, 990);
    let (w1, w2, w3) = (w.clone(), w.clone(), w);
    cases.push(Case::new(
        "conv2d",
        "constant weight",
        vec![uniform::<T>(&X_SHAPE, -1.0, 1.0, 991)],
        move |a| a[0].conv2d(&w1, 2, 1),
        move |a, t| conv2d_jvp(&a[0], &w2, 2, 1, Some(&t[0]), None),
        move |a, g| vec![conv2d_vjp_input(g, a[0].shape(), &w3, 2, 1)],
    ));
    let x = uniform::<T>(&X_SHAPE, -1.0, 1.0, 992);
    let (x1, x2, x3) = (x.clone(), x.clone(), x);
    cases.push(Case::new(
        "conv2d",
        "constant input",
        vec![uniform::<T>(&[3, 2, 2, 3], -1.0, 1.0, 993)],
        move |a| x1.conv2d(&a[0], 2, 1),
        move |a, t| conv2d_jvp(&x2, &a[0], 2, 1, None, Some(&t[0])),
        move |a, g| vec![conv2d_vjp_weight(g, &x3, a[0].shape(), 2, 1)],
    ));
    for &(label, k, s) in POOLS {
        cases.push(Case::new(
            "max_pool2d",
            label,
            vec![distinct::<T>(&X_SHAPE)],
            move |a| a[0].max_pool2d(k, s),
            move |a, t| max_pool2d_jvp(&a[0], &a[0].max_pool2d(k, s), k, s, &t[0]),
            move |a, g| vec![max_pool2d_vjp(g, &a[0], &a[0].max_pool2d(k, s), k, s)],
        ));
        cases.push(Case::new(
            "avg_pool2d",
            label,
            vec![uniform::<T>(&X_SHAPE, -1.0, 1.0, 1000 + k as u64)],
            move |a| a[0].avg_pool2d(k, s),
            move |_, t| avg_pool2d_jvp(&t[0], k, s),
            move |a, g| vec![avg_pool2d_vjp(g, a[0].shape(), k, s)],
        ));
    }
    cases
}

/// `conv2d` by the definition, one output element at a time (an independent reference).
fn naive_conv(x: &Tensor<f64>, w: &Tensor<f64>, s: usize, p: usize) -> Vec<f64> {
    let ([n, c, h, wd], [o, _, kh, kw]) = (
        <[usize; 4]>::try_from(x.shape()).unwrap(),
        <[usize; 4]>::try_from(w.shape()).unwrap(),
    );
    let (oh, ow) = ((h + 2 * p - kh) / s + 1, (wd + 2 * p - kw) / s + 1);
    let (xv, wv) = (x.to_vec(), w.to_vec());
    let mut out = Vec::new();
    for ni in 0..n {
        for oi in 0..o {
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = 0.0;
                    for ci in 0..c {
                        for ki in 0..kh {
                            for kj in 0..kw {
                                let (iy, ix) = (
                                    (oy * s + ki) as isize - p as isize,
                                    (ox * s + kj) as isize - p as isize,
                                );
                                if iy < 0 || ix < 0 || iy >= h as isize || ix >= wd as isize {
                                    continue;
                                }
                                let xi = ((ni * c + ci) * h + iy as usize) * wd + ix as usize;
                                let wi = ((oi * c + ci) * kh + ki) * kw + kj;
                                acc += xv[xi] * wv[wi];
                            }
                        }
                    }
                    out.push(acc);
                }
            }
        }
    }
    out
}

/// `0, 1, 2, ...` in the given shape.
fn counting(shape: &[usize]) -> Tensor<f64> {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| i as f64).collect(), shape)
}

fn image3x3() -> Tensor<f64> {
    tensor(
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
        &[1, 1, 3, 3],
    )
}

fn kernel2x2() -> Tensor<f64> {
    tensor(&[1.0, 2.0, 3.0, 4.0], &[1, 1, 2, 2])
}

#[test]
fn conv2d_by_hand_on_a_3x3_image() {
    let (x, w) = (image3x3(), kernel2x2());
    // y[i, j] = x[i, j] + 2 x[i, j+1] + 3 x[i+1, j] + 4 x[i+1, j+1]
    let y = x.conv2d(&w, 1, 0);
    assert_eq!(y.shape(), &[1, 1, 2, 2]);
    assert_close(&y, &[37.0, 47.0, 67.0, 77.0], 0.0);
    // Padding 1: the border outputs see only the kernel's inner corner or edge.
    let y = x.conv2d(&w, 1, 1);
    assert_eq!(y.shape(), &[1, 1, 4, 4]);
    #[rustfmt::skip]
    let expected = [
        4.0, 11.0, 18.0, 9.0,
        18.0, 37.0, 47.0, 21.0,
        36.0, 67.0, 77.0, 33.0,
        14.0, 23.0, 26.0, 9.0,
    ];
    assert_close(&y, &expected, 0.0);
    // Stride 2 with padding 1 keeps every other row and column of the padded result.
    let y = x.conv2d(&w, 2, 1);
    assert_eq!(y.shape(), &[1, 1, 2, 2]);
    assert_close(&y, &[4.0, 18.0, 36.0, 77.0], 0.0);
    // Stride 2 without padding: (3 - 2) / 2 + 1 = 1 window.
    let y = x.conv2d(&w, 2, 0);
    assert_eq!(y.shape(), &[1, 1, 1, 1]);
    assert_close(&y, &[37.0], 0.0);
}

#[test]
fn conv2d_rules_by_hand_on_a_3x3_image() {
    let (x, w) = (image3x3(), kernel2x2());
    let ones = Tensor::<f64>::ones(&[1, 1, 2, 2]);
    // Each input element collects the kernel entries that touch it.
    let gx = conv2d_vjp_input(&ones, &[1, 1, 3, 3], &w, 1, 0);
    assert_close(&gx, &[1.0, 3.0, 2.0, 4.0, 10.0, 6.0, 3.0, 7.0, 4.0], 0.0);
    // Each kernel entry collects the 2x2 block of the image it slides over.
    let gw = conv2d_vjp_weight(&ones, &x, &[1, 1, 2, 2], 1, 0);
    assert_close(&gw, &[12.0, 16.0, 24.0, 28.0], 0.0);
    // Stride 2, padding 1: windows meet the image in one corner, an edge, or fully.
    let g = tensor::<f64>(&[1.0, 2.0, 3.0, 4.0], &[1, 1, 2, 2]);
    let gx = conv2d_vjp_input(&g, &[1, 1, 3, 3], &w, 2, 1);
    assert_close(&gx, &[4.0, 6.0, 8.0, 6.0, 4.0, 8.0, 12.0, 12.0, 16.0], 0.0);
    // gw[a, b] = Σ g[o] · (padded x)[2o + (a, b)]
    let gw = conv2d_vjp_weight(&g, &x, &[1, 1, 2, 2], 2, 1);
    assert_close(
        &gw,
        &[
            4.0 * 5.0,
            3.0 * 4.0 + 4.0 * 6.0,
            2.0 * 2.0 + 4.0 * 8.0,
            1.0 + 2.0 * 3.0 + 3.0 * 7.0 + 4.0 * 9.0,
        ],
        0.0,
    );
    let dx = tensor::<f64>(
        &[0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
        &[1, 1, 3, 3],
    );
    // Only the centre moves: each output sees it under a different kernel entry.
    let t = conv2d_jvp(&x, &w, 1, 0, Some(&dx), None);
    assert_close(&t, &[4.0, 3.0, 2.0, 1.0], 0.0);
    let t = conv2d_jvp(&x, &w, 1, 0, Some(&dx), Some(&kernel2x2()));
    assert_close(&t, &[41.0, 50.0, 69.0, 78.0], 0.0);
}

#[test]
fn conv2d_matches_the_definition_with_channels_and_batch() {
    for (i, &(_, w_shape, s, p)) in CONVS.iter().enumerate() {
        let x = uniform::<f64>(&X_SHAPE, -1.0, 1.0, 1100 + i as u64);
        let w = uniform::<f64>(&w_shape, -1.0, 1.0, 1200 + i as u64);
        let y = x.conv2d(&w, s, p);
        let oh = (X_SHAPE[2] + 2 * p - w_shape[2]) / s + 1;
        let ow = (X_SHAPE[3] + 2 * p - w_shape[3]) / s + 1;
        assert_eq!(y.shape(), &[2, 3, oh, ow]);
        assert_close(&y, &naive_conv(&x, &w, s, p), 1e-12);
    }
}

#[test]
fn max_pool2d_by_hand() {
    let x = counting(&[1, 1, 4, 4]);
    assert_close(&x.max_pool2d(2, 2), &[5.0, 7.0, 13.0, 15.0], 0.0);
    // 5x5 with 2x2 windows, stride 2: the last row and column are left out.
    let x = counting(&[1, 1, 5, 5]);
    let y = x.max_pool2d(2, 2);
    assert_eq!(y.shape(), &[1, 1, 2, 2]);
    assert_close(&y, &[6.0, 8.0, 16.0, 18.0], 0.0);
}

/// Ties for a window's maximum share its derivative evenly; overlapping windows add up.
#[test]
fn max_pool2d_splits_ties_evenly() {
    let x = tensor::<f64>(&[1.0, 1.0, 0.0, 1.0], &[1, 1, 2, 2]);
    let y = x.max_pool2d(2, 2);
    assert_close(&y, &[1.0], 0.0);
    let gx = max_pool2d_vjp(&tensor(&[3.0], &[1, 1, 1, 1]), &x, &y, 2, 2);
    assert_close(&gx, &[1.0, 1.0, 0.0, 1.0], 0.0);
    let dx = tensor::<f64>(&[3.0, 6.0, 100.0, 0.0], &[1, 1, 2, 2]);
    assert_close(&max_pool2d_jvp(&x, &y, 2, 2, &dx), &[3.0], 0.0);

    let x = tensor::<f64>(
        &[0.0, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        &[1, 1, 3, 3],
    );
    let y = x.max_pool2d(2, 1);
    assert_close(&y, &[5.0, 5.0, 0.0, 0.0], 0.0);
    let gx = max_pool2d_vjp(&Tensor::ones(&[1, 1, 2, 2]), &x, &y, 2, 1);
    assert_close(&gx, &[0.0, 2.0, 0.0, 0.25, 0.5, 0.25, 0.25, 0.5, 0.25], 0.0);
}

#[test]
fn max_pool2d_propagates_nan_and_its_gradient() {
    let x = tensor::<f64>(
        &[1.0, f64::NAN, 3.0, 2.0, 1.0, 2.0, 3.0, 4.0],
        &[1, 2, 2, 2],
    );
    let y = x.max_pool2d(2, 2);
    assert!(y.to_vec()[0].is_nan());
    assert_eq!(y.to_vec()[1], 4.0);
    let gx = max_pool2d_vjp(&tensor(&[1.0, 1.0], &[1, 2, 1, 1]), &x, &y, 2, 2);
    assert_close(&gx, &[0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], 0.0);
}

#[test]
fn avg_pool2d_by_hand() {
    let x = counting(&[1, 1, 4, 4]);
    assert_close(&x.avg_pool2d(2, 2), &[2.5, 4.5, 10.5, 12.5], 0.0);
    let g = tensor::<f64>(&[1.0, 2.0, 3.0, 4.0], &[1, 1, 2, 2]);
    let gx = avg_pool2d_vjp(&g, &[1, 1, 4, 4], 2, 2);
    #[rustfmt::skip]
    let expected = [
        0.25, 0.25, 0.5, 0.5,
        0.25, 0.25, 0.5, 0.5,
        0.75, 0.75, 1.0, 1.0,
        0.75, 0.75, 1.0, 1.0,
    ];
    assert_close(&gx, &expected, 0.0);
    // Overlapping windows: the centre is in all four.
    let gx = avg_pool2d_vjp(&Tensor::<f64>::ones(&[1, 1, 2, 2]), &[1, 1, 3, 3], 2, 1);
    assert_close(&gx, &[0.25, 0.5, 0.25, 0.5, 1.0, 0.5, 0.25, 0.5, 0.25], 0.0);
}

#[track_caller]
#[test]
fn conv2d_rejects_bad_shapes_naming_op_and_shapes() {
    let x = Tensor::<f64>::zeros(&[1, 2, 3, 3]);
    let msg = panic_message(|| x.conv2d(&Tensor::zeros(&[1, 3, 2, 2]), 1, 0));
    assert!(
        msg.starts_with("conv2d:") && msg.contains("[1, 2, 3, 3]") && msg.contains("[1, 3, 2, 2]"),
        "{msg}"
    );
    let big = Tensor::<f64>::zeros(&[1, 2, 4, 4]);
    let msg = panic_message(|| x.conv2d(&big, 1, 0));
    assert!(
        msg.starts_with("conv2d:") && msg.contains("[1, 2, 4, 4]"),
        "{msg}"
    );
    // Padding 1 makes room for the 4x4 kernel.
    assert_eq!(x.conv2d(&big, 1, 1).shape(), &[1, 1, 2, 2]);
    let msg = panic_message(|| x.conv2d(&Tensor::zeros(&[1, 2, 2, 2]), 0, 0));
    assert!(
        msg.starts_with("conv2d:") && msg.contains("stride"),
        "{msg}"
    );
    let err = Tensor::<f64>::zeros(&[2, 3, 3])
        .try_conv2d(&Tensor::zeros(&[1, 2, 2, 2]), 1, 0)
        .unwrap_err();
    assert_eq!(err.op(), "conv2d");
    assert!(err.to_string().contains("[2, 3, 3]"), "{err}");
    let msg = panic_message(|| {
        conv2d_vjp_input(
            &Tensor::<f64>::zeros(&[1, 1, 3, 3]),
            &[1, 2, 3, 3],
            &Tensor::zeros(&[1, 2, 2, 2]),
            1,
            0,
        )
    });
    assert!(
        msg.starts_with("conv2d:") && msg.contains("[1, 1, 3, 3]"),
        "{msg}"
    );
}

#[test]
fn pooling_rejects_bad_geometry_naming_op_and_shape() {
    let x = Tensor::<f64>::zeros(&[1, 1, 3, 4]);
    let msg = panic_message(|| x.max_pool2d(4, 1));
    assert!(
        msg.starts_with("max_pool2d:") && msg.contains("[1, 1, 3, 4]"),
        "{msg}"
    );
    let msg = panic_message(|| x.avg_pool2d(2, 0));
    assert!(
        msg.starts_with("avg_pool2d:") && msg.contains("[1, 1, 3, 4]"),
        "{msg}"
    );
    let msg = panic_message(|| x.max_pool2d(0, 1));
    assert!(msg.starts_with("max_pool2d:"), "{msg}");
    let err = Tensor::<f64>::zeros(&[3, 4])
        .try_avg_pool2d(2, 2)
        .unwrap_err();
    assert_eq!(err.op(), "avg_pool2d");
    assert!(err.to_string().contains("[3, 4]"), "{err}");
}

/// A zero cotangent stays exactly zero against infinite operands.
#[test]
fn zero_cotangent_is_a_strong_zero() {
    let x = tensor::<f64>(&[f64::INFINITY; 9], &[1, 1, 3, 3]);
    let w = tensor::<f64>(&[f64::INFINITY; 4], &[1, 1, 2, 2]);
    let g = Tensor::<f64>::zeros(&[1, 1, 2, 2]);
    assert_close(
        &conv2d_vjp_input(&g, &[1, 1, 3, 3], &w, 1, 0),
        &[0.0; 9],
        0.0,
    );
    assert_close(
        &conv2d_vjp_weight(&g, &x, &[1, 1, 2, 2], 1, 0),
        &[0.0; 4],
        0.0,
    );
}
