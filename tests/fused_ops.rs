//! Every elementwise op of the registry inside a fused tree, not alone: its operands are values
//! the region computes from the parameters (made different from each other on purpose), and its
//! value feeds further ops, so the op's scalar forms run inside the fused loops, with the
//! partials and the values they read taken from the registry's `Fusion` entry. Each function's
//! every variant is checked against central finite differences (`check_variants!`), so a
//! partial applied to the wrong operand, a swapped read or a value the backward pass did not
//! keep gives a failing test.
//!
//! `a` and `b` are positive and cross each other (for `maximum`, `minimum` and the logarithms),
//! `u` lies inside `(-1, 1)` for the inverse functions that need it.

mod support;

use support::check_variants;

/// A module `$name` with `f(x, y, w)`: `sum((op(a, b, u) + a) * w)` for the expression `$op`.
macro_rules! fused_cases {
    ($($name:ident: |$a:ident, $b:ident, $u:ident| $op:expr;)*) => {
        $(
            mod $name {
                use rune_ad::prelude::*;

                #[differentiable]
                pub fn f(x: &Tensor<f64>, y: &Tensor<f64>, w: &Tensor<f64>) -> Tensor<f64> {
                    let $a = (x * 0.9 + 0.1).exp();
                    let $b = (y * 0.7).sin() + 1.4;
                    let $u = (y * 0.6 - x * 0.2).tanh() * 0.8;
                    let v = $op;
                    ((v + &$a) * w).sum()
                }
            }
        )*

        #[test]
        fn every_elementwise_op_inside_a_fused_tree_against_finite_differences() {
            let x = rune_ad::Tensor::from_vec(vec![0.31, -0.62, 0.93, -0.14, 0.55, -0.87], &[2, 3]);
            let y = rune_ad::Tensor::from_vec(vec![-0.48, 0.77, 0.12, 1.03, -0.91, 0.26], &[2, 3]);
            let w = rune_ad::Tensor::from_vec(vec![1.3, -0.4, 0.8, 2.1, -1.7, 0.6], &[2, 3]);
            $(
                check_variants!(mod $name; [x, y, w]; (&x, &y, &w));
            )*
        }
    };
}

fused_cases! {
    add: |a, b, _u| &a + &b;
    sub: |a, b, _u| &a - &b;
    mul: |a, b, _u| &a * &b;
    div: |a, b, _u| &a / &b;
    neg: |a, b, _u| -(&a * &b);
    pow: |a, b, _u| a.pow(&b);
    maximum: |a, b, _u| a.maximum(&b);
    minimum: |a, b, _u| a.minimum(&b);
    fmax: |a, b, _u| a.fmax(&b);
    fmin: |a, b, _u| a.fmin(&b);
    logaddexp: |a, b, _u| a.logaddexp(&b);
    xlogy: |a, b, _u| a.xlogy(&b);
    xlog1py: |a, b, _u| a.xlog1py(&b);
    atan2: |a, b, u| u.atan2(&b);
    hypot: |a, b, _u| a.hypot(&b);
    clamp: |a, b, _u| (&a * &b).clamp(0.9, 2.2);
    powf: |a, b, _u| (&a + &b).powf(2.5);
    powi: |a, b, _u| (&a - &b).powi(3);
    where_cond: |a, b, _u| where_cond(&a.le(1.2), &(&a * &b), &(&b - &a));
    exp: |a, b, _u| (&a - &b).exp();
    ln: |a, b, _u| (&a * &b).ln();
    log2: |a, b, _u| (&a * &b).log2();
    exp2: |a, b, _u| (&a - &b).exp2();
    log1p: |a, b, _u| (&a * &b).log1p();
    sin: |a, b, _u| (&a * &b).sin();
    cos: |a, b, _u| (&a * &b).cos();
    tan: |a, b, u| (&u * &b * 0.5).tan();
    tanh: |a, b, _u| (&a - &b).tanh();
    sigmoid: |a, b, _u| (&a - &b).sigmoid();
    relu: |a, b, _u| (&a - &b).relu();
    sqrt: |a, b, _u| (&a * &b).sqrt();
    cbrt: |a, b, _u| (&a - &b).cbrt();
    silu: |a, b, _u| (&a * &b).silu() * &b;
    gelu: |a, b, _u| (&a - &b).gelu() * &a;
    gelu_tanh: |a, b, _u| (&a * &b).gelu_tanh() + &b;
    recip: |a, b, _u| (&a + &b).recip();
    abs: |a, b, _u| (&a - &b).abs();
    square: |a, b, _u| (&a - &b).square();
    softplus: |a, b, _u| (&a - &b).softplus();
    expm1: |a, b, _u| (&a - &b).expm1();
    log_sigmoid: |a, b, _u| (&a - &b).log_sigmoid();
    erf: |a, b, _u| (&a - &b).erf();
    erfc: |a, b, _u| (&a - &b).erfc();
    erfinv: |a, b, u| (&u * &b * 0.4).erfinv();
    lgamma: |a, b, _u| (&a * &b).lgamma();
    digamma: |a, b, _u| (&a * &b).digamma();
    sinh: |a, b, _u| (&a - &b).sinh();
    cosh: |a, b, _u| (&a - &b).cosh();
    asinh: |a, b, _u| (&a - &b).asinh();
    acosh: |a, b, _u| (&a * &b + 1.0).acosh();
    atanh: |a, b, u| (&u * &b * 0.4).atanh();
    asin: |a, b, u| (&u * &b * 0.4).asin();
    acos: |a, b, u| (&u * &b * 0.4).acos();
    atan: |a, b, _u| (&a - &b).atan();
    sign: |a, b, _u| (&a - &b).sign() * &b;
    signum: |a, b, _u| (&a - &b).signum() * &b;
    floor: |a, b, _u| (&a * &b * 3.0).floor() * &b;
    ceil: |a, b, _u| (&a * &b * 3.0).ceil() * &b;
    round: |a, b, _u| (&a * &b * 3.0).round() * &b;
    round_ties_even: |a, b, _u| (&a * &b * 3.0).round_ties_even() * &b;
}

/// The cases above name every op the registry fuses.
#[test]
fn the_cases_cover_every_op_the_registry_fuses() {
    let source = include_str!("fused_ops.rs");
    for op in rune_ad::all_ops() {
        if !op.fused {
            continue;
        }
        let case = format!("\n    {}: |", op.name);
        assert!(source.contains(&case), "no fused case for {}", op.name);
    }
}
