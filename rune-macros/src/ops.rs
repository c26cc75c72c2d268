//! The op table: which method and function names are differentiable primitives, how their
//! arguments split into tensor inputs and configuration, and how to call their rules.
//!
//! It is the one place the macro knows about ops, and it mirrors the runtime's rule table
//! (`rune_runtime::all_ops()`); a test keeps the two in step.
//!
//! Rule calls are written as templates over these argument names:
//!
//! | name | emitted as |
//! |---|---|
//! | `g` | the cotangent of the op's output |
//! | `y` | the op's output |
//! | `a0`, `a1`, ... | tensor input `i` (a saved value or an owned constant) |
//! | `s0`, `s1`, ... | the saved shape of tensor input `i` |
//! | `c0`, `c1`, ... | configuration argument `j` |
//! | `t0`, ... | the tangent of input `i` (`&Tensor`) |
//! | `o0`, ... | the tangent of input `i` as `Option<&Tensor>` (`None` for a constant input) |
//! | `list`, `olist`, `k`, `sizes` | for `concat`/`stack`: the inputs, their optional tangents, the input's index, and the saved lengths along the axis |

/// One argument position of an op (after the receiver, for methods).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// A differentiable tensor input.
    Tensor,
    /// A tensor input given as a list `&[&a, &b, ..]` (concat, stack).
    TensorList,
    /// A configuration argument: constant, with the type to annotate it with (if any) and how
    /// the backward pass keeps it.
    Config(Option<&'static str>, Keep),
}

/// How a configuration argument is kept for the backward pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// A `Copy` value, captured as it is.
    Copy,
    /// A borrowed value (slice, tensor), kept through `Residual` in owned form.
    Owned,
}

/// How users write the op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `x.name(args)`: the receiver is tensor input 0.
    Method,
    /// `name(args)`.
    Function,
    /// A binary operator (`+ - * /`): inputs 0 and 1 may each be a tensor or a scalar.
    Operator,
    /// Unary minus.
    Negation,
}

/// One primitive op.
#[derive(Debug)]
pub struct OpSpec {
    pub name: &'static str,
    pub form: Form,
    pub params: &'static [Param],
    /// The JVP rule call.
    pub jvp: &'static str,
    /// One VJP rule call per tensor input, in order (one for a tensor list, with `k`).
    pub vjp: &'static [&'static str],
}

#[cfg(test)]
impl OpSpec {
    /// The number of tensor inputs (the receiver counts for methods).
    pub fn tensor_inputs(&self) -> usize {
        let receiver = usize::from(matches!(self.form, Form::Method | Form::Negation));
        let binary = if self.form == Form::Operator { 2 } else { 0 };
        receiver
            + binary
            + self
                .params
                .iter()
                .filter(|p| matches!(p, Param::Tensor))
                .count()
    }
}

const T: Param = Param::Tensor;
const LIST: Param = Param::TensorList;
const SCALAR: Param = Param::Config(None, Keep::Copy);
const AXIS: Param = Param::Config(Some("isize"), Keep::Copy);
const AXES: Param = Param::Config(Some("&[isize]"), Keep::Owned);
const KEEPDIMS: Param = Param::Config(Some("bool"), Keep::Copy);
const USIZE: Param = Param::Config(Some("usize"), Keep::Copy);
const SHAPE: Param = Param::Config(Some("&[usize]"), Keep::Owned);
const RANGES: Param = Param::Config(Some("&[(usize, usize)]"), Keep::Owned);
const MASK: Param = Param::Config(None, Keep::Owned);
const INDICES: Param = Param::Config(None, Keep::Owned);

macro_rules! op {
    ($name:literal, $form:ident, [$($p:expr),*], $jvp:expr, [$($vjp:expr),*]) => {
        OpSpec {
            name: $name,
            form: Form::$form,
            params: &[$($p),*],
            jvp: $jvp,
            vjp: &[$($vjp),*],
        }
    };
}

macro_rules! unary {
    ($($name:literal reads $r:ident;)*) => {
        &[$(
            op!($name, Method, [], concat!($name, "_jvp(", stringify!($r), ", t0)"),
                [concat!($name, "_vjp(g, ", stringify!($r), ")")])
        ),*]
    };
}

/// Elementwise unary ops: `x` or `y` is what the rules read.
pub const UNARY: &[OpSpec] = unary! {
    "exp" reads y; "ln" reads a0; "log2" reads a0; "exp2" reads y; "log1p" reads a0;
    "sin" reads a0; "cos" reads a0; "tan" reads y; "tanh" reads y; "sigmoid" reads y;
    "relu" reads a0; "sqrt" reads y; "recip" reads y; "abs" reads a0; "square" reads a0;
};

/// Every other op.
pub const OTHER: &[OpSpec] = &[
    op!(
        "add",
        Operator,
        [],
        "add_jvp(y, o0, o1)",
        ["add_vjp_lhs(g, s0)", "add_vjp_rhs(g, s1)"]
    ),
    op!(
        "sub",
        Operator,
        [],
        "sub_jvp(y, o0, o1)",
        ["sub_vjp_lhs(g, s0)", "sub_vjp_rhs(g, s1)"]
    ),
    op!(
        "mul",
        Operator,
        [],
        "mul_jvp(a0, a1, y, o0, o1)",
        ["mul_vjp_lhs(g, s0, a1)", "mul_vjp_rhs(g, a0, s1)"]
    ),
    op!(
        "div",
        Operator,
        [],
        "div_jvp(a1, y, o0, o1)",
        ["div_vjp_lhs(g, s0, a1)", "div_vjp_rhs(g, a1, y)"]
    ),
    op!("neg", Negation, [], "neg_jvp(t0)", ["neg_vjp(g)"]),
    op!(
        "clamp",
        Method,
        [SCALAR, SCALAR],
        "clamp_jvp(a0, c0, c1, t0)",
        ["clamp_vjp(g, a0, c0, c1)"]
    ),
    op!(
        "powf",
        Method,
        [SCALAR],
        "powf_jvp(a0, c0, t0)",
        ["powf_vjp(g, a0, c0)"]
    ),
    op!(
        "pow",
        Method,
        [T],
        "pow_jvp(a0, a1, y, o0, o1)",
        ["pow_vjp_lhs(g, a0, a1)", "pow_vjp_rhs(g, a0, y, s1)"]
    ),
    op!(
        "maximum",
        Method,
        [T],
        "maximum_jvp(a0, a1, o0, o1)",
        ["maximum_vjp_lhs(g, a0, a1)", "maximum_vjp_rhs(g, a0, a1)"]
    ),
    op!(
        "minimum",
        Method,
        [T],
        "minimum_jvp(a0, a1, o0, o1)",
        ["minimum_vjp_lhs(g, a0, a1)", "minimum_vjp_rhs(g, a0, a1)"]
    ),
    op!("sum", Method, [], "sum_jvp(t0)", ["sum_vjp(g, s0)"]),
    op!(
        "sum_axes",
        Method,
        [AXES, KEEPDIMS],
        "sum_axes_jvp(c0, c1, t0)",
        ["sum_axes_vjp(g, s0, c0, c1)"]
    ),
    op!("mean", Method, [], "mean_jvp(t0)", ["mean_vjp(g, s0)"]),
    op!(
        "mean_axes",
        Method,
        [AXES, KEEPDIMS],
        "mean_axes_jvp(c0, c1, t0)",
        ["mean_axes_vjp(g, s0, c0, c1)"]
    ),
    op!(
        "max",
        Method,
        [],
        "max_jvp(a0, y, t0)",
        ["max_vjp(g, a0, y)"]
    ),
    op!(
        "max_axes",
        Method,
        [AXES, KEEPDIMS],
        "max_axes_jvp(a0, y, c0, c1, t0)",
        ["max_axes_vjp(g, a0, y, c0, c1)"]
    ),
    op!(
        "min",
        Method,
        [],
        "min_jvp(a0, y, t0)",
        ["min_vjp(g, a0, y)"]
    ),
    op!(
        "min_axes",
        Method,
        [AXES, KEEPDIMS],
        "min_axes_jvp(a0, y, c0, c1, t0)",
        ["min_axes_vjp(g, a0, y, c0, c1)"]
    ),
    op!("prod", Method, [], "prod_jvp(a0, t0)", ["prod_vjp(g, a0)"]),
    op!(
        "prod_axes",
        Method,
        [AXES, KEEPDIMS],
        "prod_axes_jvp(a0, c0, c1, t0)",
        ["prod_axes_vjp(g, a0, c0, c1)"]
    ),
    op!(
        "logsumexp",
        Method,
        [],
        "logsumexp_jvp(a0, y, t0)",
        ["logsumexp_vjp(g, a0, y)"]
    ),
    op!(
        "logsumexp_axes",
        Method,
        [AXES, KEEPDIMS],
        "logsumexp_axes_jvp(a0, y, c0, c1, t0)",
        ["logsumexp_axes_vjp(g, a0, y, c0, c1)"]
    ),
    op!(
        "softmax",
        Method,
        [AXIS],
        "softmax_jvp(y, c0, t0)",
        ["softmax_vjp(g, y, c0)"]
    ),
    op!(
        "log_softmax",
        Method,
        [AXIS],
        "log_softmax_jvp(y, c0, t0)",
        ["log_softmax_vjp(g, y, c0)"]
    ),
    op!(
        "cumsum",
        Method,
        [AXIS],
        "cumsum_jvp(c0, t0)",
        ["cumsum_vjp(g, c0)"]
    ),
    op!(
        "cumprod",
        Method,
        [AXIS],
        "cumprod_jvp(a0, c0, t0)",
        ["cumprod_vjp(g, a0, y, c0)"]
    ),
    op!(
        "reshape",
        Method,
        [SHAPE],
        "reshape_jvp(c0, t0)",
        ["reshape_vjp(g, s0)"]
    ),
    op!(
        "permute",
        Method,
        [SHAPE],
        "permute_jvp(c0, t0)",
        ["permute_vjp(g, c0)"]
    ),
    op!("t", Method, [], "t_jvp(t0)", ["t_vjp(g)"]),
    op!(
        "broadcast_to",
        Method,
        [SHAPE],
        "broadcast_to_jvp(c0, t0)",
        ["broadcast_to_vjp(g, s0)"]
    ),
    op!(
        "expand_dims",
        Method,
        [AXIS],
        "expand_dims_jvp(c0, t0)",
        ["expand_dims_vjp(g, c0)"]
    ),
    op!(
        "squeeze",
        Method,
        [AXIS],
        "squeeze_jvp(c0, t0)",
        ["squeeze_vjp(g, s0)"]
    ),
    op!(
        "shrink",
        Method,
        [RANGES],
        "shrink_jvp(c0, t0)",
        ["shrink_vjp(g, s0, c0)"]
    ),
    op!(
        "pad",
        Method,
        [RANGES, SCALAR],
        "pad_jvp(c0, t0)",
        ["pad_vjp(g, c0)"]
    ),
    op!(
        "flip",
        Method,
        [SHAPE],
        "flip_jvp(c0, t0)",
        ["flip_vjp(g, c0)"]
    ),
    op!(
        "unfold",
        Method,
        [USIZE, USIZE, USIZE, USIZE],
        "unfold_jvp(c0, c1, c2, c3, t0)",
        ["unfold_vjp(g, s0, c0, c1, c2, c3)"]
    ),
    op!(
        "fold",
        Method,
        [SHAPE, USIZE, USIZE, USIZE, USIZE],
        "fold_jvp(c0, c1, c2, c3, c4, t0)",
        ["fold_vjp(g, c1, c2, c3, c4)"]
    ),
    op!(
        "concat",
        Function,
        [LIST, AXIS],
        "concat_jvp(list, c0, olist)",
        ["concat_vjp(g, k, sizes, c0)"]
    ),
    op!(
        "stack",
        Function,
        [LIST, AXIS],
        "stack_jvp(list, c0, olist)",
        ["stack_vjp(g, k, c0)"]
    ),
    op!(
        "where_cond",
        Function,
        [MASK, T, T],
        "where_cond_jvp(c0, y, o0, o1)",
        [
            "where_cond_vjp_lhs(g, c0, s0)",
            "where_cond_vjp_rhs(g, c0, s1)"
        ]
    ),
    op!(
        "gather",
        Method,
        [AXIS, INDICES],
        "gather_jvp(c0, c1, t0)",
        ["gather_vjp(g, s0, c0, c1)"]
    ),
    op!(
        "scatter_add",
        Method,
        [AXIS, INDICES, T],
        "scatter_add_jvp(y, c0, c1, o0, o1)",
        [
            "scatter_add_vjp_input(g)",
            "scatter_add_vjp_updates(g, c0, c1)"
        ]
    ),
    op!(
        "matmul",
        Method,
        [T],
        "matmul_jvp(a0, a1, o0, o1)",
        ["matmul_vjp_lhs(g, s0, a1)", "matmul_vjp_rhs(g, a0, s1)"]
    ),
    op!(
        "conv2d",
        Method,
        [T, USIZE, USIZE],
        "conv2d_jvp(a0, a1, c0, c1, o0, o1)",
        [
            "conv2d_vjp_input(g, s0, a1, c0, c1)",
            "conv2d_vjp_weight(g, a0, s1, c0, c1)"
        ]
    ),
    op!(
        "max_pool2d",
        Method,
        [USIZE, USIZE],
        "max_pool2d_jvp(a0, y, c0, c1, t0)",
        ["max_pool2d_vjp(g, a0, y, c0, c1)"]
    ),
    op!(
        "avg_pool2d",
        Method,
        [USIZE, USIZE],
        "avg_pool2d_jvp(t0, c0, c1)",
        ["avg_pool2d_vjp(g, s0, c0, c1)"]
    ),
    op!(
        "dual_of",
        Function,
        [T, T],
        "dual_of_jvp(y, o0, o1)",
        ["dual_of_vjp_lhs(g)", "dual_of_vjp_rhs(g)"]
    ),
    op!(
        "tangent_of",
        Function,
        [T],
        "tangent_of_jvp(t0)",
        ["tangent_of_vjp(g)"]
    ),
    op!(
        "primal_of",
        Function,
        [T],
        "primal_of_jvp(t0)",
        ["primal_of_vjp(g)"]
    ),
    op!("cast", Method, [], "cast_jvp(t0)", ["cast_vjp_as(g, w)"]),
];

/// Tensor methods that read only shape metadata: always constant, never a concretization.
pub const METADATA: &[&str] = &["shape", "ndim", "len", "is_empty", "is_some", "is_none"];

/// Tensor methods whose results are constants by nature (masks, indices).
pub const NONDIFF: &[&str] = &["lt", "gt", "le", "ge", "eq", "ne", "argmax", "argmin"];

/// Tensor methods that read an active tensor's numbers: the gradient cannot flow through them.
pub const CONCRETIZING: &[&str] = &["item", "to_vec", "to_array", "view", "as_shared", "map"];

/// The op named `name` in the given form, if any.
pub fn lookup(name: &str, form: Form) -> Option<&'static OpSpec> {
    UNARY
        .iter()
        .chain(OTHER)
        .find(|op| op.name == name && op.form == form)
}

/// The names of all ops users call as methods, for error messages.
pub fn method_names() -> Vec<&'static str> {
    UNARY
        .iter()
        .chain(OTHER)
        .filter(|op| op.form == Form::Method)
        .map(|op| op.name)
        .collect()
}

/// A parsed rule template: the function name and its argument names.
pub fn parse_template(template: &str) -> (&str, Vec<&str>) {
    let open = template
        .find('(')
        .expect("rule template has an argument list");
    let name = &template[..open];
    let inner = template[open + 1..].trim_end_matches(')');
    let args = inner
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .collect();
    (name, args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_has_one_vjp_per_tensor_input() {
        for op in UNARY.iter().chain(OTHER) {
            let lists = op.params.contains(&Param::TensorList);
            let expected = if lists { 1 } else { op.tensor_inputs() };
            assert_eq!(op.vjp.len(), expected, "{}", op.name);
            for template in op.vjp.iter().chain([&op.jvp]) {
                let (name, _) = parse_template(template);
                assert!(name.starts_with(op.name), "{} names {}", op.name, name);
            }
        }
    }
}
