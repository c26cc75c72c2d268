//! Every differentiable op's JVP and VJP rules, checked against central finite differences and
//! by the dot-product test, for f32 and f64, on broadcasting shapes; plus hand-derived values
//! for the cases the reference implementation gets wrong.

mod common;

mod arith;
mod binary;
mod cast;
mod combine;
mod conv;
mod decomp;
mod duals;
mod factorize;
mod index;
mod linalg;
mod poly;
mod ported;
mod reduce;
mod scan;
mod shape;
mod slice;
mod softmax;
mod sort;
mod special;
mod stats;
mod unary;

use common::Case;
use rune_runtime::{all_ops, check_grad, Element};

fn all_cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    cases.extend(arith::cases::<T>());
    cases.extend(cast::cases::<T>());
    cases.extend(unary::cases::<T>());
    cases.extend(binary::cases::<T>());
    cases.extend(special::cases::<T>());
    cases.extend(shape::cases::<T>());
    cases.extend(slice::cases::<T>());
    cases.extend(combine::cases::<T>());
    cases.extend(index::cases::<T>());
    cases.extend(linalg::cases::<T>());
    cases.extend(decomp::cases::<T>());
    cases.extend(conv::cases::<T>());
    cases.extend(duals::cases::<T>());
    cases.extend(reduce::cases::<T>());
    cases.extend(scan::cases::<T>());
    cases.extend(softmax::cases::<T>());
    cases.extend(stats::cases::<T>());
    cases.extend(sort::cases::<T>());
    cases.extend(ported::cases::<T>());
    cases.extend(poly::cases::<T>());
    cases.extend(unused_input_cases::<T>());
    cases
}

/// Ops with an input the output does not depend on at these values: its pulled-back cotangent
/// must be exactly zero (which the finite differences along it confirm) and its tangent must
/// not leak into the output.
fn unused_input_cases<T: Element>() -> Vec<Case<T>> {
    use rune_runtime::__private::rules::*;
    use rune_runtime::{where_cond, Tensor};
    let a = common::uniform::<T>(&[2, 3], 1.0, 2.0, 600);
    let b = common::uniform::<T>(&[3], -2.0, -1.0, 601);
    let everywhere = || Tensor::full(&[2, 3], true);
    vec![
        Case::new(
            "where_cond",
            "the unselected branch is an unused input",
            vec![a.clone(), b.clone()],
            move |x| where_cond(&everywhere(), &x[0], &x[1]),
            move |x, t| {
                let y = where_cond(&everywhere(), &x[0], &x[1]);
                where_cond_jvp(&everywhere(), &y, Some(&t[0]), Some(&t[1]))
            },
            move |x, g| {
                vec![
                    where_cond_vjp_lhs(g, &everywhere(), x[0].shape()),
                    where_cond_vjp_rhs(g, &everywhere(), x[1].shape()),
                ]
            },
        ),
        Case::new(
            "maximum",
            "the smaller operand is an unused input",
            vec![a, b],
            |x| x[0].maximum(&x[1]),
            |x, t| maximum_jvp(&x[0], &x[1], Some(&t[0]), Some(&t[1])),
            |x, g| {
                vec![
                    maximum_vjp_lhs(g, &x[0], &x[1]),
                    maximum_vjp_rhs(g, &x[0], &x[1]),
                ]
            },
        ),
    ]
}

fn run_all<T: Element>() {
    let mut failures = Vec::new();
    for case in all_cases::<T>() {
        if let Err(e) = check_grad(&*case.f, &case.args, T::FD_EPS, T::GRAD_TOL, T::GRAD_TOL) {
            failures.push(format!("{} ({}) [{}]: {e}", case.op, case.label, T::NAME));
        }
    }
    assert!(
        failures.is_empty(),
        "rule checks failed:\n{}",
        failures.join("\n")
    );
}

#[test]
fn rules_match_finite_differences_f64() {
    run_all::<f64>();
}

#[test]
fn rules_match_finite_differences_f32() {
    run_all::<f32>();
}

/// A differentiable op without a checked JVP and VJP fails here.
#[test]
fn every_differentiable_op_has_checked_rules() {
    let covered: std::collections::BTreeSet<&str> =
        all_cases::<f64>().iter().map(|c| c.op).collect();
    let missing: Vec<&str> = all_ops()
        .iter()
        .filter(|op| op.differentiable && !covered.contains(op.name))
        .map(|op| op.name)
        .collect();
    assert!(missing.is_empty(), "ops without rule checks: {missing:?}");
}

/// Every primitive of Rune's `autodiff.ml` has a counterpart here (the crate docs' table).
#[test]
fn every_reference_primitive_has_a_counterpart() {
    let primitives = [
        "add",
        "mul",
        "neg",
        "log2",
        "exp2",
        "sin",
        "sqrt",
        "recip",
        "fdiv",
        "pow",
        "max",
        "reshape",
        "expand",
        "reduce_sum",
        "reduce_max",
        "reduce_prod",
        "associative_scan sum",
        "associative_scan prod",
        "permute",
        "pad",
        "shrink",
        "flip",
        "cat",
        "cast",
        "contiguous",
        "copy",
        "where",
        "gather",
        "scatter",
        "assign",
        "idiv",
        "mod",
        "cmplt",
        "cmpne",
        "xor",
        "or",
        "and",
        "const_scalar",
        "const_array",
        "threefry",
        "unfold",
        "fold",
        "matmul",
    ];
    let references: Vec<String> = all_ops()
        .iter()
        .flat_map(|op| {
            op.reference
                .trim_start_matches("composite: ")
                .split(", ")
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    let missing: Vec<&str> = primitives
        .iter()
        .filter(|p| !references.iter().any(|r| r == *p))
        .copied()
        .collect();
    assert!(missing.is_empty(), "no counterpart for {missing:?}");
}
