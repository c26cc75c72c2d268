//! Every op but the elementwise functions of one tensor (those are in [`crate::for_each_unary!`]).
//!
//! Rule argument lists follow the runtime's conventions (see `rune_runtime::ops`): a JVP takes
//! what it reads, then configuration, then tangents; a VJP takes the cotangent first. Entries
//! without rules are ops whose results AD treats as constants; their `params` are left empty,
//! since the macro never lowers them to rule calls.

use crate::{
    Batching, Eval, Form, Fusion, Keep, Kind, OpDef, Param, Partial, Read, Rule, RuleArg::*, Rules,
};

const T: Param = Param::Tensor;
const LIST: Param = Param::TensorList;
const SCALAR: Param = Param::Config(None, Keep::Copy);
const AXIS: Param = Param::Config(Some("isize"), Keep::Copy);
const AXES: Param = Param::Config(Some("&[isize]"), Keep::Owned);
const KEEPDIMS: Param = Param::Config(Some("bool"), Keep::Copy);
const USIZE: Param = Param::Config(Some("usize"), Keep::Copy);
const INT: Param = Param::Config(Some("i32"), Keep::Copy);
const OFFSET: Param = Param::Config(Some("isize"), Keep::Copy);
const FLAG: Param = Param::Config(Some("bool"), Keep::Copy);
const SHAPE: Param = Param::Config(Some("&[usize]"), Keep::Owned);
/// `reshape`'s shape: `usize` lengths, or signed ones with a `-1` (`rune_runtime::NewShape`),
/// so left without a type for untyped literals (`&[2, -1]`) to infer one.
const NEW_SHAPE: Param = Param::Config(None, Keep::Owned);
const RANGES: Param = Param::Config(Some("&[(usize, usize)]"), Keep::Owned);
const MASK: Param = Param::Config(None, Keep::Owned);
const INDICES: Param = Param::Config(None, Keep::Owned);
const SPEC: Param = Param::Config(Some("&str"), Keep::Owned);

/// One entry of [`OTHER`]: `op!(name, Form, Kind, [params], reference)`, then for a
/// differentiable op its rules, `jvp "name"(args), vjp ["name"(args), ..]` (one VJP per tensor
/// input), and for an elementwise op `fusion fusion!(..)`.
macro_rules! op {
    ($name:literal, $form:ident, $kind:ident, [$($param:expr),*], $reference:literal
     $(, jvp $jvp:literal($($ja:expr),*), vjp [$($vjp:literal($($va:expr),*)),* $(,)?]
       $(, vjp_into $into:literal)?)?
     $(, fusion $fusion:expr)? $(, batch $batch:expr)? $(,)?) => {
        OpDef {
            name: $name,
            form: Form::$form,
            kind: Kind::$kind,
            params: &[$($param),*],
            rules: or_none!($(Some(Rules {
                jvp: Rule { name: $jvp, args: &[$($ja),*] },
                vjp: &[$(Rule { name: $vjp, args: &[$($va),*] }),*],
                vjp_into: or_none!($(Some($into))?),
            }))?),
            reference: $reference,
            fusion: or_none!($($fusion)?),
            batch: or_else!(Batching::of_kind(Kind::$kind) $(, $batch)?),
        }
    };
}

/// The value given, or `None`.
macro_rules! or_none {
    () => {
        None
    };
    ($value:expr) => {
        $value
    };
}

/// The value given, or the default.
macro_rules! or_else {
    ($default:expr) => {
        $default
    };
    ($default:expr, $value:expr) => {
        $value
    };
}

/// `Some(Fusion { .. })`: how fused regions evaluate an elementwise op, then one partial per
/// differentiated operand, `operand => "scalar form"(reads..)`, where `x0`, `x1`, .. read
/// operand 0, 1, .. and `y` the op's value.
macro_rules! fusion {
    ($eval:ident; $($operand:literal => $form:literal ($($read:ident)*)),* $(,)?) => {
        Some(Fusion {
            eval: Eval::$eval,
            partials: &[$(Partial {
                operand: $operand,
                form: $form,
                reads: &[$(read!($read)),*],
            }),*],
        })
    };
}

/// What a partial reads, in `fusion!`'s shorthand.
macro_rules! read {
    (y) => {
        Read::Output
    };
    (x0) => {
        Read::Operand(0)
    };
    (x1) => {
        Read::Operand(1)
    };
    (x2) => {
        Read::Operand(2)
    };
}

/// Every op but the elementwise functions of one tensor. (rustfmt re-indents some entries
/// of `op!` and not others; the layout here is one piece of an entry a line.)
#[rustfmt::skip]
pub const OTHER: &[OpDef] = &[
    op!("add", Operator, Elementwise, [], "add",
        jvp "add_jvp"(Output, MaybeTangent(0), MaybeTangent(1)),
        vjp ["add_vjp_lhs"(Cotangent, Shape(0)), "add_vjp_rhs"(Cotangent, Shape(1))],
        fusion fusion!(Arithmetic; 0 => ""(), 1 => ""())),
    op!("sub", Operator, Elementwise, [], "add, neg",
        jvp "sub_jvp"(Output, MaybeTangent(0), MaybeTangent(1)),
        vjp ["sub_vjp_lhs"(Cotangent, Shape(0)), "sub_vjp_rhs"(Cotangent, Shape(1))],
        fusion fusion!(Arithmetic; 0 => ""(), 1 => ""())),
    op!("mul", Operator, Elementwise, [], "mul",
        jvp "mul_jvp"(Input(0), Input(1), Output, MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "mul_vjp_lhs"(Cotangent, Shape(0), Input(1)),
            "mul_vjp_rhs"(Cotangent, Input(0), Shape(1)),
        ],
        fusion fusion!(Arithmetic; 0 => ""(x1), 1 => ""(x0))),
    op!("div", Operator, Elementwise, [], "fdiv",
        jvp "div_jvp"(Input(1), Output, MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "div_vjp_lhs"(Cotangent, Shape(0), Input(1)),
            "div_vjp_rhs"(Cotangent, Input(1), Output),
        ],
        fusion fusion!(Arithmetic; 0 => ""(x1), 1 => ""(x1 y))),
    op!("neg", Negation, Elementwise, [], "neg",
        jvp "neg_jvp"(Tangent(0)),
        vjp ["neg_vjp"(Cotangent)],
        fusion fusion!(Negation; 0 => ""())),
    op!("clamp", Method, Elementwise, [SCALAR, SCALAR], "composite: max, neg",
        jvp "clamp_jvp"(Input(0), Config(0), Config(1), Tangent(0)),
        vjp ["clamp_vjp"(Cotangent, Input(0), Config(0), Config(1))],
        fusion fusion!(Scalar; 0 => "clamp_d"(x0 x1 x2))),
    op!("powf", Method, Elementwise, [SCALAR], "pow",
        jvp "powf_jvp"(Input(0), Config(0), Tangent(0)),
        vjp ["powf_vjp"(Cotangent, Input(0), Config(0))],
        fusion fusion!(Scalar; 0 => "powf_d"(x0 x1))),
    op!("pow", Method, Elementwise, [T], "pow",
        jvp "pow_jvp"(Input(0), Input(1), Output, MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "pow_vjp_lhs"(Cotangent, Input(0), Input(1)),
            "pow_vjp_rhs"(Cotangent, Input(0), Output, Shape(1)),
        ],
        fusion fusion!(Scalar; 0 => "pow_lhs"(x0 x1), 1 => "pow_rhs"(x0 y))),
    op!("logaddexp", Method, Elementwise, [T], "composite: max, add, exp2, log2",
        jvp "logaddexp_jvp"(Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "logaddexp_vjp_lhs"(Cotangent, Input(0), Input(1)),
            "logaddexp_vjp_rhs"(Cotangent, Input(0), Input(1)),
        ],
        fusion fusion!(Scalar; 0 => "logaddexp_lhs"(x0 x1), 1 => "logaddexp_rhs"(x0 x1))),
    op!("xlogy", Method, Elementwise, [T], "composite: mul, log2, where",
        jvp "xlogy_jvp"(Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "xlogy_vjp_lhs"(Cotangent, Input(0), Input(1)),
            "xlogy_vjp_rhs"(Cotangent, Input(0), Input(1)),
        ],
        fusion fusion!(Scalar; 0 => "xlogy_lhs"(x0 x1), 1 => "xlogy_rhs"(x0 x1))),
    op!("xlog1py", Method, Elementwise, [T], "composite: mul, add, log2, where",
        jvp "xlog1py_jvp"(Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "xlog1py_vjp_lhs"(Cotangent, Input(0), Input(1)),
            "xlog1py_vjp_rhs"(Cotangent, Input(0), Input(1)),
        ],
        fusion fusion!(Scalar; 0 => "xlog1py_lhs"(x0 x1), 1 => "xlog1py_rhs"(x0 x1))),
    op!("atan2", Method, Elementwise, [T], "composite: not in the reference",
        jvp "atan2_jvp"(Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "atan2_vjp_lhs"(Cotangent, Input(0), Input(1)),
            "atan2_vjp_rhs"(Cotangent, Input(0), Input(1)),
        ],
        fusion fusion!(Scalar; 0 => "atan2_lhs"(x0 x1), 1 => "atan2_rhs"(x0 x1))),
    op!("hypot", Method, Elementwise, [T], "composite: mul, add, sqrt",
        jvp "hypot_jvp"(Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "hypot_vjp_lhs"(Cotangent, Input(0), Input(1)),
            "hypot_vjp_rhs"(Cotangent, Input(0), Input(1)),
        ],
        fusion fusion!(Scalar; 0 => "hypot_lhs"(x0 x1), 1 => "hypot_rhs"(x0 x1))),
    op!("powi", Method, Elementwise, [INT], "composite: mul",
        jvp "powi_jvp"(Input(0), Config(0), Tangent(0)),
        vjp ["powi_vjp"(Cotangent, Input(0), Config(0))],
        fusion fusion!(Scalar; 0 => "powi_d"(x0 x1))),
    op!("dot", Method, LinearAlgebra, [T], "composite: mul, reduce_sum",
        jvp "dot_jvp"(Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)),
        vjp ["dot_vjp_lhs"(Cotangent, Input(1)), "dot_vjp_rhs"(Cotangent, Input(0))],
        batch Batching::Einsum(Some("i,i->"))),
    op!("outer", Method, LinearAlgebra, [T], "composite: reshape, expand, mul",
        jvp "outer_jvp"(Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)),
        vjp ["outer_vjp_lhs"(Cotangent, Input(1)), "outer_vjp_rhs"(Cotangent, Input(0))],
        batch Batching::Einsum(Some("i,j->ij"))),
    op!("polyval", Function, LinearAlgebra, [T, T], "composite: mul, add",
        jvp "polyval_jvp"(Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "polyval_vjp_p"(Cotangent, Input(0), Input(1)),
            "polyval_vjp_x"(Cotangent, Input(0), Input(1)),
        ]),
    op!("norm", Method, LinearAlgebra, [], "composite: mul, reduce_sum, sqrt",
        jvp "norm_jvp"(Input(0), Output, Tangent(0)),
        vjp ["norm_vjp"(Cotangent, Input(0), Output)]),
    op!("trace", Method, LinearAlgebra, [], "composite: reduce_sum, mul",
        jvp "trace_jvp"(Tangent(0)),
        vjp ["trace_vjp"(Cotangent, Shape(0))],
        batch Batching::Trailing),
    op!("diagonal", Method, LinearAlgebra, [], "composite: gather, scatter",
        jvp "diagonal_jvp"(Tangent(0)),
        vjp ["diagonal_vjp"(Cotangent, Shape(0))],
        batch Batching::Trailing),
    op!("diag", Method, LinearAlgebra, [], "composite: scatter, gather",
        jvp "diag_jvp"(Tangent(0)),
        vjp ["diag_vjp"(Cotangent)],
        batch Batching::Trailing),
    op!("triu", Method, LinearAlgebra, [OFFSET], "composite: cmplt, where",
        jvp "triu_jvp"(Config(0), Tangent(0)),
        vjp ["triu_vjp"(Cotangent, Config(0))],
        batch Batching::Trailing),
    op!("tril", Method, LinearAlgebra, [OFFSET], "composite: cmplt, where",
        jvp "tril_jvp"(Config(0), Tangent(0)),
        vjp ["tril_vjp"(Cotangent, Config(0))],
        batch Batching::Trailing),
    op!("cholesky", Method, LinearAlgebra, [], "composite: not in the reference",
        jvp "cholesky_jvp"(Output, Tangent(0)),
        vjp ["cholesky_vjp"(Cotangent, Output)],
        batch Batching::Trailing),
    op!("solve_triangular", Method, LinearAlgebra, [T, FLAG, FLAG],
        "composite: not in the reference",
        jvp "solve_triangular_jvp"(Input(0), Output, Config(0), Config(1), MaybeTangent(0),
            MaybeTangent(1)),
        vjp [
            "solve_triangular_vjp_lhs"(Cotangent, Input(0), Output, Config(0), Config(1)),
            "solve_triangular_vjp_rhs"(Cotangent, Input(0), Shape(1), Config(0), Config(1)),
        ],
        batch Batching::Elementwise),
    op!("solve", Method, LinearAlgebra, [T], "composite: not in the reference",
        jvp "solve_jvp"(Input(0), Output, MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "solve_vjp_lhs"(Cotangent, Input(0), Output),
            "solve_vjp_rhs"(Cotangent, Input(0), Shape(1)),
        ],
        batch Batching::Elementwise),
    op!("inv", Method, LinearAlgebra, [], "composite: not in the reference",
        jvp "inv_jvp"(Output, Tangent(0)),
        vjp ["inv_vjp"(Cotangent, Output)],
        batch Batching::Trailing),
    op!("det", Method, LinearAlgebra, [], "composite: not in the reference",
        jvp "det_jvp"(Input(0), Tangent(0)),
        vjp ["det_vjp"(Cotangent, Input(0))],
        batch Batching::Trailing),
    op!("logabsdet", Method, LinearAlgebra, [], "composite: not in the reference",
        jvp "logabsdet_jvp"(Input(0), Tangent(0)),
        vjp ["logabsdet_vjp"(Cotangent, Input(0))],
        batch Batching::Trailing),
    op!("sign_det", Method, LinearAlgebra, [], "composite: not in the reference",
        jvp "sign_det_jvp"(Tangent(0)),
        vjp ["sign_det_vjp"(Cotangent, Shape(0))],
        batch Batching::Trailing),
    op!("cho_solve", Method, LinearAlgebra, [T], "composite: not in the reference",
        jvp "cho_solve_jvp"(Input(0), Output, MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "cho_solve_vjp_lhs"(Cotangent, Input(0), Output),
            "cho_solve_vjp_rhs"(Cotangent, Input(0), Shape(1)),
        ],
        batch Batching::Elementwise),
    op!("qr_q", Method, LinearAlgebra, [], "composite: not in the reference",
        jvp "qr_q_jvp"(Input(0), Tangent(0)),
        vjp ["qr_q_vjp"(Cotangent, Input(0))],
        batch Batching::Trailing),
    op!("qr_r", Method, LinearAlgebra, [], "composite: not in the reference",
        jvp "qr_r_jvp"(Input(0), Tangent(0)),
        vjp ["qr_r_vjp"(Cotangent, Input(0))],
        batch Batching::Trailing),
    op!("eigvalsh", Method, LinearAlgebra, [], "composite: not in the reference",
        jvp "eigvalsh_jvp"(Input(0), Tangent(0)),
        vjp ["eigvalsh_vjp"(Cotangent, Input(0))],
        batch Batching::Trailing),
    op!("eigh_vectors", Method, LinearAlgebra, [], "composite: not in the reference",
        jvp "eigh_vectors_jvp"(Input(0), Tangent(0)),
        vjp ["eigh_vectors_vjp"(Cotangent, Input(0))],
        batch Batching::Trailing),
    op!("svd_u", Method, LinearAlgebra, [], "composite: not in the reference",
        jvp "svd_u_jvp"(Input(0), Tangent(0)),
        vjp ["svd_u_vjp"(Cotangent, Input(0))],
        batch Batching::Trailing),
    op!("svdvals", Method, LinearAlgebra, [], "composite: not in the reference",
        jvp "svdvals_jvp"(Input(0), Tangent(0)),
        vjp ["svdvals_vjp"(Cotangent, Input(0))],
        batch Batching::Trailing),
    op!("svd_vh", Method, LinearAlgebra, [], "composite: not in the reference",
        jvp "svd_vh_jvp"(Input(0), Tangent(0)),
        vjp ["svd_vh_vjp"(Cotangent, Input(0))],
        batch Batching::Trailing),
    op!("lstsq", Method, LinearAlgebra, [T], "composite: not in the reference",
        jvp "lstsq_jvp"(Input(0), Input(1), Output, MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "lstsq_vjp_lhs"(Cotangent, Input(0), Input(1), Output),
            "lstsq_vjp_rhs"(Cotangent, Input(0), Shape(1)),
        ],
        batch Batching::Elementwise),
    op!("einsum", Function, LinearAlgebra, [SPEC, T, T],
        "composite: reshape, permute, reduce_sum, mul",
        jvp "einsum_jvp"(Input(0), Input(1), Config(0), MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "einsum_vjp_lhs"(Cotangent, Shape(0), Input(1), Config(0)),
            "einsum_vjp_rhs"(Cotangent, Input(0), Shape(1), Config(0)),
        ],
        batch Batching::Einsum(None)),
    op!("maximum", Method, Elementwise, [T], "max",
        jvp "maximum_jvp"(Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "maximum_vjp_lhs"(Cotangent, Input(0), Input(1)),
            "maximum_vjp_rhs"(Cotangent, Input(0), Input(1)),
        ],
        fusion fusion!(Scalar; 0 => "maximum_lhs"(x0 x1), 1 => "maximum_rhs"(x0 x1))),
    op!("minimum", Method, Elementwise, [T], "composite: max, neg",
        jvp "minimum_jvp"(Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "minimum_vjp_lhs"(Cotangent, Input(0), Input(1)),
            "minimum_vjp_rhs"(Cotangent, Input(0), Input(1)),
        ],
        fusion fusion!(Scalar; 0 => "minimum_lhs"(x0 x1), 1 => "minimum_rhs"(x0 x1))),
    op!("fmax", Method, Elementwise, [T], "composite: max, isnan, where",
        jvp "fmax_jvp"(Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "fmax_vjp_lhs"(Cotangent, Input(0), Input(1)),
            "fmax_vjp_rhs"(Cotangent, Input(0), Input(1)),
        ],
        fusion fusion!(Scalar; 0 => "fmax_lhs"(x0 x1), 1 => "fmax_rhs"(x0 x1))),
    op!("fmin", Method, Elementwise, [T], "composite: max, neg, isnan, where",
        jvp "fmin_jvp"(Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "fmin_vjp_lhs"(Cotangent, Input(0), Input(1)),
            "fmin_vjp_rhs"(Cotangent, Input(0), Input(1)),
        ],
        fusion fusion!(Scalar; 0 => "fmin_lhs"(x0 x1), 1 => "fmin_rhs"(x0 x1))),
    op!("sum", Method, Reduction, [], "reduce_sum",
        jvp "sum_jvp"(Tangent(0)),
        vjp ["sum_vjp"(Cotangent, Shape(0))],
        batch Batching::AllAxes("sum_axes")),
    op!("sum_axes", Method, Reduction, [AXES, KEEPDIMS], "reduce_sum",
        jvp "sum_axes_jvp"(Config(0), Config(1), Tangent(0)),
        vjp ["sum_axes_vjp"(Cotangent, Shape(0), Config(0), Config(1))],
        batch Batching::Axes(0)),
    op!("mean", Method, Reduction, [], "composite: reduce_sum, mul",
        jvp "mean_jvp"(Tangent(0)),
        vjp ["mean_vjp"(Cotangent, Shape(0))],
        batch Batching::AllAxes("mean_axes")),
    op!("mean_axes", Method, Reduction, [AXES, KEEPDIMS], "composite: reduce_sum, mul",
        jvp "mean_axes_jvp"(Config(0), Config(1), Tangent(0)),
        vjp ["mean_axes_vjp"(Cotangent, Shape(0), Config(0), Config(1))],
        batch Batching::Axes(0)),
    op!("max", Method, Reduction, [], "reduce_max",
        jvp "max_jvp"(Input(0), Output, Tangent(0)),
        vjp ["max_vjp"(Cotangent, Input(0), Output)],
        batch Batching::AllAxes("max_axes")),
    op!("max_axes", Method, Reduction, [AXES, KEEPDIMS], "reduce_max",
        jvp "max_axes_jvp"(Input(0), Output, Config(0), Config(1), Tangent(0)),
        vjp ["max_axes_vjp"(Cotangent, Input(0), Output, Config(0), Config(1))],
        batch Batching::Axes(0)),
    op!("min", Method, Reduction, [], "composite: neg, reduce_max",
        jvp "min_jvp"(Input(0), Output, Tangent(0)),
        vjp ["min_vjp"(Cotangent, Input(0), Output)],
        batch Batching::AllAxes("min_axes")),
    op!("min_axes", Method, Reduction, [AXES, KEEPDIMS], "composite: neg, reduce_max",
        jvp "min_axes_jvp"(Input(0), Output, Config(0), Config(1), Tangent(0)),
        vjp ["min_axes_vjp"(Cotangent, Input(0), Output, Config(0), Config(1))],
        batch Batching::Axes(0)),
    op!("prod", Method, Reduction, [], "reduce_prod",
        jvp "prod_jvp"(Input(0), Tangent(0)),
        vjp ["prod_vjp"(Cotangent, Input(0))],
        batch Batching::AllAxes("prod_axes")),
    op!("prod_axes", Method, Reduction, [AXES, KEEPDIMS], "reduce_prod",
        jvp "prod_axes_jvp"(Input(0), Config(0), Config(1), Tangent(0)),
        vjp ["prod_axes_vjp"(Cotangent, Input(0), Config(0), Config(1))],
        batch Batching::Axes(0)),
    op!("logsumexp", Method, Reduction, [], "composite: reduce_max, add, exp2, reduce_sum, log2",
        jvp "logsumexp_jvp"(Input(0), Output, Tangent(0)),
        vjp ["logsumexp_vjp"(Cotangent, Input(0), Output)],
        batch Batching::AllAxes("logsumexp_axes")),
    op!("logsumexp_axes", Method, Reduction, [AXES, KEEPDIMS],
        "composite: reduce_max, add, exp2, reduce_sum, log2",
        jvp "logsumexp_axes_jvp"(Input(0), Output, Config(0), Config(1), Tangent(0)),
        vjp ["logsumexp_axes_vjp"(Cotangent, Input(0), Output, Config(0), Config(1))],
        batch Batching::Axes(0)),
    op!("softmax", Method, Normalization, [AXIS],
        "composite: reduce_max, add, exp2, reduce_sum, fdiv",
        jvp "softmax_jvp"(Output, Config(0), Tangent(0)),
        vjp ["softmax_vjp"(Cotangent, Output, Config(0))],
        batch Batching::Axis(&[0])),
    op!("log_softmax", Method, Normalization, [AXIS],
        "composite: reduce_max, add, exp2, reduce_sum, log2",
        jvp "log_softmax_jvp"(Output, Config(0), Tangent(0)),
        vjp ["log_softmax_vjp"(Cotangent, Output, Config(0))],
        batch Batching::Axis(&[0])),
    op!("layer_norm", Method, Normalization, [SHAPE, SCALAR],
        "composite: reduce_sum, add, mul, sqrt, fdiv",
        jvp "layer_norm_jvp"(Input(0), Output, Config(0), Config(1), Tangent(0)),
        vjp ["layer_norm_vjp"(Cotangent, Input(0), Output, Config(0), Config(1))],
        batch Batching::Trailing),
    op!("cumsum", Method, Scan, [AXIS], "associative_scan sum",
        jvp "cumsum_jvp"(Config(0), Tangent(0)),
        vjp ["cumsum_vjp"(Cotangent, Config(0))],
        batch Batching::Axis(&[0])),
    op!("cumprod", Method, Scan, [AXIS], "associative_scan prod",
        jvp "cumprod_jvp"(Input(0), Config(0), Tangent(0)),
        vjp ["cumprod_vjp"(Cotangent, Input(0), Output, Config(0))],
        batch Batching::Axis(&[0])),
    op!("var", Method, Reduction, [USIZE], "composite: reduce_sum, add, mul",
        jvp "var_jvp"(Input(0), Config(0), Tangent(0)),
        vjp ["var_vjp"(Cotangent, Input(0), Config(0))],
        batch Batching::AllAxes("var_axes")),
    op!("var_axes", Method, Reduction, [AXES, KEEPDIMS, USIZE], "composite: reduce_sum, add, mul",
        jvp "var_axes_jvp"(Input(0), Config(0), Config(1), Config(2), Tangent(0)),
        vjp ["var_axes_vjp"(Cotangent, Input(0), Config(0), Config(1), Config(2))],
        batch Batching::Axes(0)),
    op!("std", Method, Reduction, [USIZE], "composite: reduce_sum, add, mul, sqrt",
        jvp "std_jvp"(Input(0), Output, Config(0), Tangent(0)),
        vjp ["std_vjp"(Cotangent, Input(0), Output, Config(0))],
        batch Batching::AllAxes("std_axes")),
    op!("std_axes", Method, Reduction, [AXES, KEEPDIMS, USIZE],
        "composite: reduce_sum, add, mul, sqrt",
        jvp "std_axes_jvp"(Input(0), Output, Config(0), Config(1), Config(2), Tangent(0)),
        vjp ["std_axes_vjp"(Cotangent, Input(0), Output, Config(0), Config(1), Config(2))],
        batch Batching::Axes(0)),
    op!("logcumsumexp", Method, Scan, [AXIS], "composite: max, add, exp2, log2",
        jvp "logcumsumexp_jvp"(Input(0), Config(0), Tangent(0)),
        vjp ["logcumsumexp_vjp"(Cotangent, Input(0), Config(0))],
        batch Batching::Axis(&[0])),
    op!("sort", Method, Shape, [AXIS], "composite: cmplt, gather, scatter",
        jvp "sort_jvp"(Input(0), Config(0), Tangent(0)),
        vjp ["sort_vjp"(Cotangent, Input(0), Config(0))],
        batch Batching::Axis(&[0])),
    op!("reshape", Method, Shape, [NEW_SHAPE], "reshape",
        jvp "reshape_jvp"(Config(0), Tangent(0)),
        vjp ["reshape_vjp"(Cotangent, Shape(0))],
        batch Batching::Shape(0)),
    op!("permute", Method, Shape, [SHAPE], "permute",
        jvp "permute_jvp"(Config(0), Tangent(0)),
        vjp ["permute_vjp"(Cotangent, Config(0))],
        batch Batching::Permutation(0)),
    op!("transpose", Method, Shape, [AXIS, AXIS], "permute",
        jvp "transpose_jvp"(Config(0), Config(1), Tangent(0)),
        vjp ["transpose_vjp"(Cotangent, Config(0), Config(1))],
        batch Batching::Axis(&[0, 1])),
    op!("t", Method, Shape, [], "permute",
        jvp "t_jvp"(Tangent(0)),
        vjp ["t_vjp"(Cotangent)],
        batch Batching::Trailing),
    op!("broadcast_to", Method, Shape, [SHAPE], "reshape, expand",
        jvp "broadcast_to_jvp"(Config(0), Tangent(0)),
        vjp ["broadcast_to_vjp"(Cotangent, Shape(0))],
        batch Batching::Shape(0)),
    op!("expand_dims", Method, Shape, [AXIS], "reshape",
        jvp "expand_dims_jvp"(Config(0), Tangent(0)),
        vjp ["expand_dims_vjp"(Cotangent, Config(0))],
        batch Batching::Axis(&[0])),
    op!("squeeze", Method, Shape, [AXIS], "reshape",
        jvp "squeeze_jvp"(Config(0), Tangent(0)),
        vjp ["squeeze_vjp"(Cotangent, Shape(0))],
        batch Batching::Axis(&[0])),
    op!("shrink", Method, Shape, [RANGES], "shrink",
        jvp "shrink_jvp"(Config(0), Tangent(0)),
        vjp ["shrink_vjp"(Cotangent, Shape(0), Config(0))], vjp_into "shrink_vjp_into",
        batch Batching::Ranges(0)),
    op!("pad", Method, Shape, [RANGES, SCALAR], "pad",
        jvp "pad_jvp"(Config(0), Tangent(0)),
        vjp ["pad_vjp"(Cotangent, Config(0))],
        batch Batching::Ranges(0)),
    op!("flip", Method, Shape, [SHAPE], "flip",
        jvp "flip_jvp"(Config(0), Tangent(0)),
        vjp ["flip_vjp"(Cotangent, Config(0))],
        batch Batching::Axes(0)),
    op!("unfold", Method, Shape, [USIZE, USIZE, USIZE, USIZE], "unfold",
        jvp "unfold_jvp"(Config(0), Config(1), Config(2), Config(3), Tangent(0)),
        vjp ["unfold_vjp"(Cotangent, Shape(0), Config(0), Config(1), Config(2), Config(3))]),
    op!("fold", Method, Shape, [SHAPE, USIZE, USIZE, USIZE, USIZE], "fold",
        jvp "fold_jvp"(Config(0), Config(1), Config(2), Config(3), Config(4), Tangent(0)),
        vjp ["fold_vjp"(Cotangent, Config(1), Config(2), Config(3), Config(4))]),
    op!("concat", Function, Combine, [LIST, AXIS], "cat",
        jvp "concat_jvp"(Inputs, Config(0), MaybeTangents),
        vjp ["concat_vjp"(Cotangent, ListIndex, ListSizes, Config(0))],
        batch Batching::List),
    op!("stack", Function, Combine, [LIST, AXIS], "composite: reshape, cat",
        jvp "stack_jvp"(Inputs, Config(0), MaybeTangents),
        vjp ["stack_vjp"(Cotangent, ListIndex, Config(0))],
        batch Batching::List),
    op!("where_cond", Function, Combine, [MASK, T, T], "where",
        jvp "where_cond_jvp"(Config(0), Output, MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "where_cond_vjp_lhs"(Cotangent, Config(0), Shape(0)),
            "where_cond_vjp_rhs"(Cotangent, Config(0), Shape(1)),
        ],
        fusion fusion!(Select; 1 => "where_cond_lhs"(x0), 2 => "where_cond_rhs"(x0)),
        batch Batching::Elementwise),
    op!("masked_fill", Method, Combine, [MASK, SCALAR], "where",
        jvp "masked_fill_jvp"(Config(0), Tangent(0)),
        vjp ["masked_fill_vjp"(Cotangent, Config(0), Shape(0))],
        batch Batching::Elementwise),
    op!("gather", Method, Indexing, [AXIS, INDICES], "gather",
        jvp "gather_jvp"(Config(0), Config(1), Tangent(0)),
        vjp ["gather_vjp"(Cotangent, Shape(0), Config(0), Config(1))]),
    op!("index_select", Method, Indexing, [AXIS, INDICES], "composite: gather, scatter",
        jvp "index_select_jvp"(Config(0), Config(1), Tangent(0)),
        vjp ["index_select_vjp"(Cotangent, Shape(0), Config(0), Config(1))],
        batch Batching::Axis(&[0])),
    op!("embedding", Function, Indexing, [INDICES, T], "composite: gather, scatter",
        jvp "embedding_jvp"(Config(0), Tangent(0)),
        vjp ["embedding_vjp"(Cotangent, Shape(0), Config(0))]),
    op!("scatter_add", Method, Indexing, [AXIS, INDICES, T], "scatter",
        jvp "scatter_add_jvp"(Output, Config(0), Config(1), MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "scatter_add_vjp_input"(Cotangent),
            "scatter_add_vjp_updates"(Cotangent, Config(0), Config(1)),
        ]),
    op!("matmul", Method, LinearAlgebra, [T], "matmul",
        jvp "matmul_jvp"(Input(0), Input(1), MaybeTangent(0), MaybeTangent(1)),
        vjp [
            "matmul_vjp_lhs"(Cotangent, Shape(0), Input(1)),
            "matmul_vjp_rhs"(Cotangent, Input(0), Shape(1)),
        ],
        batch Batching::Matmul),
    op!("conv2d", Method, Window, [T, USIZE, USIZE], "composite: pad, unfold, matmul",
        jvp "conv2d_jvp"(Input(0), Input(1), Config(0), Config(1), MaybeTangent(0),
            MaybeTangent(1)),
        vjp [
            "conv2d_vjp_input"(Cotangent, Shape(0), Input(1), Config(0), Config(1)),
            "conv2d_vjp_weight"(Cotangent, Input(0), Shape(1), Config(0), Config(1)),
        ]),
    op!("max_pool2d", Method, Window, [USIZE, USIZE], "composite: unfold, reduce_max",
        jvp "max_pool2d_jvp"(Input(0), Output, Config(0), Config(1), Tangent(0)),
        vjp ["max_pool2d_vjp"(Cotangent, Input(0), Output, Config(0), Config(1))]),
    op!("avg_pool2d", Method, Window, [USIZE, USIZE], "composite: unfold, reduce_sum, mul",
        jvp "avg_pool2d_jvp"(Tangent(0), Config(0), Config(1)),
        vjp ["avg_pool2d_vjp"(Cotangent, Shape(0), Config(0), Config(1))]),
    op!("dual_of", Function, Dual, [T, T], "composite: forward mode by dual numbers",
        jvp "dual_of_jvp"(Output, MaybeTangent(0), MaybeTangent(1)),
        vjp ["dual_of_vjp_lhs"(Cotangent), "dual_of_vjp_rhs"(Cotangent)]),
    op!("tangent_of", Function, Dual, [T], "composite: forward mode by dual numbers",
        jvp "tangent_of_jvp"(Tangent(0)),
        vjp ["tangent_of_vjp"(Cotangent)]),
    op!("primal_of", Function, Dual, [T], "composite: forward mode by dual numbers",
        jvp "primal_of_jvp"(Tangent(0)),
        vjp ["primal_of_vjp"(Cotangent)]),
    op!("cast", Method, Cast, [], "cast",
        jvp "cast_jvp"(Tangent(0)),
        vjp ["cast_vjp_as"(Cotangent, CastWitness)]),
    op!("lt", Method, Comparison, [], "cmplt"),
    op!("gt", Method, Comparison, [], "cmplt"),
    op!("le", Method, Comparison, [], "composite: cmplt, xor"),
    op!("ge", Method, Comparison, [], "composite: cmplt, xor"),
    op!("eq", Method, Comparison, [], "composite: cmpne, xor"),
    op!("ne", Method, Comparison, [], "cmpne"),
    op!(
        "argmax",
        Method,
        Indexing,
        [],
        "composite: reduce_max, cmpne, where"
        ),
    op!(
        "argmin",
        Method,
        Indexing,
        [],
        "composite: neg, reduce_max, cmpne, where"
        ),
    op!("argsort", Method, Indexing, [], "composite: cmplt, where"),
    op!("and", Method, Discrete, [], "and"),
    op!("or", Method, Discrete, [], "or"),
    op!("xor", Method, Discrete, [], "xor"),
    op!("not", Method, Discrete, [], "composite: xor"),
    op!("int_add", Operator, Discrete, [], "add"),
    op!("int_sub", Operator, Discrete, [], "composite: add, neg"),
    op!("int_mul", Operator, Discrete, [], "mul"),
    op!("int_div", Operator, Discrete, [], "idiv"),
    op!("int_rem", Operator, Discrete, [], "mod"),
    op!(
        "stop_gradient",
        Function,
        Cast,
        [],
        "composite: identity whose result AD treats as a constant"
        ),
    op!("clone", Method, Shape, [], "contiguous, copy",
        batch Batching::Trailing),
    op!("scalar", Constructor, Constructor, [], "const_scalar"),
    op!("full", Constructor, Constructor, [], "const_scalar, expand"),
    op!("eye", Constructor, Constructor, [], "const_array"),
    op!(
        "zeros",
        Constructor,
        Constructor,
        [],
        "const_scalar, expand"
        ),
    op!("ones", Constructor, Constructor, [], "const_scalar, expand"),
    op!(
        "zeros_like",
        Method,
        Constructor,
        [],
        "const_scalar, expand"
        ),
    op!("ones_like", Method, Constructor, [], "const_scalar, expand"),
    op!("from_vec", Constructor, Constructor, [], "const_array"),
    op!("try_from_vec", Constructor, Constructor, [], "const_array"),
    op!("arange", Constructor, Constructor, [], "const_array"),
    op!("arange_step", Constructor, Constructor, [], "const_array"),
    op!(
        "try_arange_step",
        Constructor,
        Constructor,
        [],
        "const_array"
        ),
    op!("linspace", Constructor, Constructor, [], "const_array"),
    op!("try_linspace", Constructor, Constructor, [], "const_array"),
    op!("rand_uniform", Constructor, Constructor, [], "threefry"),
    op!("rand_normal", Constructor, Constructor, [], "threefry"),
    op!("add_assign", Operator, Assign, [], "assign"),
    op!("sub_assign", Operator, Assign, [], "assign"),
    op!("mul_assign", Operator, Assign, [], "assign"),
    op!("div_assign", Operator, Assign, [], "assign"),
];
