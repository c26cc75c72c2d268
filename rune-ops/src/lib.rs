//! The op registry of rune-ad: every primitive op declared once, as data that both the runtime
//! (`rune-runtime`) and the macro (`rune-macros`) read.
//!
//! An entry ([`OpDef`]) says how users write the op ([`Form`], [`Param`]), what kind of op it is
//! ([`Kind`]), which primitive of Rune's `autodiff.ml` it corresponds to, and, for a
//! differentiable op, the call of each derivative rule as a typed argument list ([`RuleArg`]):
//! what the rule reads (the cotangent, the output, an input, only an input's shape, a
//! configuration argument, tangents). The macro writes rule calls from these lists and saves for
//! the backward pass exactly what they name; the runtime's rule functions take arguments in the
//! same order, so a rule that reads something its entry does not name fails to compile.
//!
//! Elementwise functions of one tensor are declared in [`for_each_unary!`], a table that the
//! runtime expands into its kernels, its rules (from the one scalar derivative of each function,
//! in `rune_runtime::scalar`) and the macro's tests, and that this crate expands into
//! [`UNARY`]. Every other op is an entry of [`OTHER`]; [`all`] iterates both.
//!
//! This crate depends on nothing, so that the proc-macro crate can read the registry at compile
//! time without building the runtime.

#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![no_std]

/// How users write an op.
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
    /// `Tensor::name(args)`: a constructor.
    Constructor,
}

/// What kind of op an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One output element from the elements at the same position of the (broadcast) inputs.
    Elementwise,
    /// Reduces over all axes or some (`sum`, `max_axes`, `logsumexp`).
    Reduction,
    /// A running reduction along one axis (`cumsum`, `cumprod`).
    Scan,
    /// Normalises along one axis or the last ones (`softmax`, `log_softmax`, `layer_norm`).
    Normalization,
    /// Moves or copies elements without arithmetic (`reshape`, `permute`, `pad`, `unfold`).
    Shape,
    /// Several tensors into one (`concat`, `stack`, `where_cond`).
    Combine,
    /// Reads or writes elements at given indices (`gather`, `scatter_add`, `argmax`).
    Indexing,
    /// Matrix products and factorizations.
    LinearAlgebra,
    /// Sliding windows: convolution and pooling.
    Window,
    /// Element type conversion.
    Cast,
    /// Forward mode inside a function: dual numbers built and taken apart.
    Dual,
    /// A comparison giving a mask.
    Comparison,
    /// Boolean and integer arithmetic.
    Discrete,
    /// Makes a constant tensor.
    Constructor,
    /// In-place updates (`+=`), differentiated as the binary op they update with.
    Assign,
}

/// How a configuration argument is kept for the backward pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// A `Copy` value, captured as it is.
    Copy,
    /// A borrowed value (slice, tensor), kept in owned form.
    Owned,
}

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

/// One argument of a rule call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleArg {
    /// The cotangent of the op's output (VJP rules).
    Cotangent,
    /// The op's output.
    Output,
    /// Tensor input `i` (a saved value, or a constant).
    Input(usize),
    /// The shape of tensor input `i`.
    Shape(usize),
    /// Configuration argument `j`.
    Config(usize),
    /// The tangent of tensor input `i`, as `&Tensor` (one-input ops).
    Tangent(usize),
    /// The tangent of tensor input `i` as `Option<&Tensor>`, `None` for a constant input.
    MaybeTangent(usize),
    /// A tensor list's inputs, `&[&a, &b, ..]`.
    Inputs,
    /// A tensor list's optional tangents.
    MaybeTangents,
    /// The position of the input a tensor list's VJP is for.
    ListIndex,
    /// The lengths of a tensor list's inputs along the op's axis.
    ListSizes,
    /// A value of the cast's source type, fixing the type the cotangent casts back to.
    CastWitness,
}

/// A rule call: the runtime function (in `rune_runtime::rules`) and its arguments in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The function's name.
    pub name: &'static str,
    /// Its arguments.
    pub args: &'static [RuleArg],
}

impl Rule {
    /// Whether the call reads `arg`.
    pub fn reads(&self, arg: RuleArg) -> bool {
        self.args.contains(&arg)
    }
}

/// The derivative rules of a differentiable op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules {
    /// The JVP: input tangents to the output tangent.
    pub jvp: Rule,
    /// One VJP per tensor input, in order (one for a tensor list, called with
    /// [`RuleArg::ListIndex`]).
    pub vjp: &'static [Rule],
    /// For an op whose VJP is mostly zeros (a slice put back in place): a rule that adds input
    /// 0's VJP into its adjoint where it is nonzero, called as `name(&mut adjoint, <vjp[0]'s
    /// arguments>)` in place of `vjp[0]` and a whole-tensor add. A loop that reads one slice a
    /// step then costs the slice a step in the backward pass, not the whole tensor.
    pub vjp_into: Option<&'static str>,
}

/// How a fused region evaluates an elementwise op (`rune-macros`' `fuse` and `emit::fused`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eval {
    /// `+ - * /`, written as Rust's operators on the operands.
    Arithmetic,
    /// Unary minus.
    Negation,
    /// A function of [`for_each_unary!`], by its scalar form (`rune_runtime::scalar`).
    Unary,
    /// By the scalar form named as the op, `rune_runtime::generated::elementwise::<name>`, of
    /// its operands (configuration arguments among them must be literals for the op to fuse),
    /// and each partial by the scalar form [`Partial::form`].
    Scalar,
    /// `where_cond`: operand 0, the mask, selects operand 1 or operand 2.
    Select,
}

/// What a partial derivative reads besides the incoming tangent or cotangent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// Operand `i` of the op, as written: the receiver of a method or the two sides of an
    /// operator, then its parameters in order (`where_cond(mask, a, b)`: the mask is 0).
    Operand(usize),
    /// The op's value.
    Output,
}

/// The partial derivative of a fused op in one of its operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partial {
    /// The operand it is the derivative in.
    pub operand: usize,
    /// The scalar form that applies it, called as `form(d, reads..)` (for [`Eval::Scalar`] and
    /// [`Eval::Select`]); empty where the region writes it inline.
    pub form: &'static str,
    /// What it reads, in the order the scalar form takes them. The backward pass of a region
    /// computes and keeps exactly these: a read left out is a compile error in the scalar
    /// form's call, a wrong one a wrong derivative that the fused-tree tests catch.
    pub reads: &'static [Read],
}

/// How fused regions evaluate an elementwise op, and what each of its partials reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fusion {
    /// How the value is computed.
    pub eval: Eval,
    /// One partial per differentiated operand.
    pub partials: &'static [Partial],
}

/// How `f_vmap` batches an op: the op applied to arguments that carry a leading batch axis
/// (some of them) computes what it computes on each example. The macro rewrites the op's call
/// from this and runtime helpers (`rune_runtime::vmap`) that shift its configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batching {
    /// One call per example, the results stacked: the rule of an op that no cheaper rule fits
    /// (`gather`, `scatter_add`, `norm`, ..). Each call reads its example of every batched
    /// operand (a shared operand whole) and is differentiated as the op is.
    Each,
    /// Over broadcast operands: a batched operand of lower rank than another gets unit axes
    /// after its batch axis, so that NumPy's broadcasting aligns examples. Elementwise ops, and
    /// ops over the trailing matrices whose leading axes broadcast (`solve`, `lstsq`).
    Elementwise,
    /// Reads and writes each example's trailing axes only (`t`, `layer_norm`, `cast`, the
    /// factorizations of `[.., n, n]`): the call is unchanged.
    Trailing,
    /// A reduction over every axis: on a batched operand, the op named (its `_axes` form)
    /// over every axis but the batch axis, without keeping them, then the other configuration.
    AllAxes(&'static str),
    /// The configuration arguments at these positions are axes: shifted past the batch axis.
    Axis(&'static [usize]),
    /// The configuration argument at this position is a list of axes: each shifted.
    Axes(usize),
    /// The configuration argument at this position is the result's shape: the batch length
    /// goes first.
    Shape(usize),
    /// The configuration argument at this position is a permutation of axes: the batch axis
    /// stays first.
    Permutation(usize),
    /// The configuration argument at this position is one range per axis: the batch axis is
    /// kept whole (`shrink`) or not padded (`pad`).
    Ranges(usize),
    /// A list of tensors (`concat`, `stack`) and an axis: every tensor of the list batched
    /// when one is (the others repeated along the batch axis), the axis shifted past it.
    List,
    /// NumPy's `matmul`: vector operands become matrices, the operands' batch axes are aligned,
    /// and the added axes are dropped again.
    Matmul,
    /// A contraction: `einsum` with a letter for the batch axis added to the batched operands'
    /// subscripts and put first in the output's. `Some(spec)`: the op is that contraction of
    /// its two operands (`dot` is `"i,i->"`) and becomes an `einsum`; `None`: the op is
    /// `einsum`, its spec the first argument.
    Einsum(Option<&'static str>),
    /// Maps each slice along its receiver's first axis (the images of `conv2d` and the
    /// pooling ops): a batched receiver's batch axis is merged into that axis, one call for
    /// every example, while the other operands are shared; one call per example otherwise.
    Images,
}

impl Batching {
    /// The rule an op of `kind` has unless its entry says otherwise.
    pub const fn of_kind(kind: Kind) -> Batching {
        match kind {
            Kind::Elementwise | Kind::Comparison | Kind::Discrete | Kind::Assign => {
                Batching::Elementwise
            }
            Kind::Constructor | Kind::Cast => Batching::Trailing,
            Kind::Window => Batching::Images,
            _ => Batching::Each,
        }
    }
}

/// One primitive op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpDef {
    /// The method or function name users write (`"exp"`, `"sum_axes"`, `"add"` for `+`).
    pub name: &'static str,
    /// How users write it.
    pub form: Form,
    /// What kind of op it is.
    pub kind: Kind,
    /// Its arguments after the receiver (an operator's two operands are implied).
    pub params: &'static [Param],
    /// Its derivative rules; `None` when its results are constants to AD.
    pub rules: Option<Rules>,
    /// The primitive(s) of Rune's `autodiff.ml` this op corresponds to, or `"composite: .."`.
    pub reference: &'static str,
    /// How fused regions evaluate it: `Some` for exactly the elementwise ops and `where_cond`.
    pub fusion: Option<Fusion>,
    /// How `f_vmap` batches it.
    pub batch: Batching,
}

impl OpDef {
    /// The number of tensor inputs (the receiver counts for methods, both operands for
    /// operators); a tensor list counts once.
    pub fn tensor_inputs(&self) -> usize {
        let implied = match self.form {
            Form::Method | Form::Negation => 1,
            Form::Operator => 2,
            Form::Function | Form::Constructor => 0,
        };
        implied
            + self
                .params
                .iter()
                .filter(|p| matches!(p, Param::Tensor | Param::TensorList))
                .count()
    }

    /// Whether the op takes a tensor list.
    pub fn takes_list(&self) -> bool {
        self.params.contains(&Param::TensorList)
    }

    /// Whether the op has derivative rules.
    pub fn differentiable(&self) -> bool {
        self.rules.is_some()
    }

    /// The number of operands as written ([`Read::Operand`]): the receiver or an operator's
    /// two sides, then the parameters.
    pub fn operands(&self) -> usize {
        let implied = match self.form {
            Form::Method | Form::Negation => 1,
            Form::Operator => 2,
            Form::Function | Form::Constructor => 0,
        };
        implied + self.params.len()
    }
}

/// Calls `$m!` with the table of elementwise functions of one tensor, one entry a line:
/// `name, name_jvp, name_vjp, reads x|y, "reference", "doc";`, where `reads` says whether the local derivative is
/// computed from the input `x` or the output `y`.
///
/// The runtime builds each function's kernel, tensor method and rules from this table and the
/// function's scalar derivative (`rune_runtime::scalar::d_<name>`), which takes an `Input` or an
/// `Output` as the entry says: an entry that names the wrong one does not compile.
#[macro_export]
macro_rules! for_each_unary {
    ($m:ident) => {
        $m! {
            exp, exp_jvp, exp_vjp, reads y, "composite: exp2, mul", "`e^x`.";
            ln, ln_jvp, ln_vjp, reads x, "composite: log2, mul", "The natural logarithm (NaN below 0, `-inf` at 0).";
            log2, log2_jvp, log2_vjp, reads x, "log2", "The base-2 logarithm.";
            exp2, exp2_jvp, exp2_vjp, reads y, "exp2", "`2^x`.";
            log1p, log1p_jvp, log1p_vjp, reads x, "composite: add, log2, mul", "`ln(1 + x)`, accurate for small `x`.";
            sin, sin_jvp, sin_vjp, reads x, "sin", "The sine.";
            cos, cos_jvp, cos_vjp, reads x, "composite: sin, add", "The cosine.";
            tan, tan_jvp, tan_vjp, reads y, "composite: sin, fdiv", "The tangent.";
            tanh, tanh_jvp, tanh_vjp, reads x, "composite: exp2, add, recip, mul", "The hyperbolic tangent.";
            sigmoid, sigmoid_jvp, sigmoid_vjp, reads x, "composite: exp2, add, recip",
                "The logistic function `1 / (1 + e^-x)`, stable for large `|x|`.";
            relu, relu_jvp, relu_vjp, reads x, "composite: max", "`max(x, 0)`; the derivative at 0 is 0.";
            silu, silu_jvp, silu_vjp, reads x, "composite: exp2, add, recip, mul",
                "`x · sigmoid(x)` (SiLU, swish).";
            gelu, gelu_jvp, gelu_vjp, reads x, "composite: not in the reference",
                "`x Φ(x) = x (1 + erf(x/√2)) / 2`, the exact GELU (PyTorch's default).";
            gelu_tanh, gelu_tanh_jvp, gelu_tanh_vjp, reads x, "composite: exp2, add, recip, mul",
                "GELU's tanh approximation `x (1 + tanh(√(2/π) (x + 0.044715 x³))) / 2` (PyTorch's `approximate='tanh'`, `jax.nn.gelu`'s default).";
            sqrt, sqrt_jvp, sqrt_vjp, reads y, "sqrt", "The square root (NaN below 0).";
            recip, recip_jvp, recip_vjp, reads y, "recip", "`1 / x`.";
            cbrt, cbrt_jvp, cbrt_vjp, reads y, "composite: not in the reference",
                "The cube root (negative below 0, as `f64::cbrt`).";
            abs, abs_jvp, abs_vjp, reads x, "composite: cmplt, where, neg", "`|x|`; the derivative at 0 is 0.";
            square, square_jvp, square_vjp, reads x, "composite: mul", "`x * x`.";
            softplus, softplus_jvp, softplus_vjp, reads x, "composite: max, exp2, add, log2",
                "`ln(1 + e^x)`, stable for large `|x|`; its derivative is `sigmoid(x)`, `1/2` at 0.";
            expm1, expm1_jvp, expm1_vjp, reads x, "composite: exp2, add",
                "`e^x - 1`, accurate for small `x`.";
            log_sigmoid, log_sigmoid_jvp, log_sigmoid_vjp, reads x, "composite: max, exp2, add, log2, neg",
                "`ln(sigmoid(x)) = -softplus(-x)`, stable for large `|x|`; its derivative is `sigmoid(-x)`.";
            erf, erf_jvp, erf_vjp, reads x, "composite: not in the reference",
                "The error function `2/√π ∫₀ˣ e^(-t²) dt`.";
            erfc, erfc_jvp, erfc_vjp, reads x, "composite: not in the reference",
                "The complementary error function `1 - erf(x)`, accurate for large `x`.";
            erfinv, erfinv_jvp, erfinv_vjp, reads y, "composite: not in the reference",
                "The inverse error function on `[-1, 1]` (`±inf` at `±1`, NaN outside).";
            lgamma, lgamma_jvp, lgamma_vjp, reads x, "composite: not in the reference",
                "`ln |Γ(x)|`; its derivative is `digamma(x)`.";
            digamma, digamma_jvp, digamma_vjp, reads x, "composite: not in the reference",
                "The digamma function `ψ(x) = Γ'(x)/Γ(x)` (NaN at `0, -1, -2, ..`); its derivative is the trigamma function.";
            sinh, sinh_jvp, sinh_vjp, reads x, "composite: exp2, add, mul", "The hyperbolic sine.";
            cosh, cosh_jvp, cosh_vjp, reads x, "composite: exp2, add, mul", "The hyperbolic cosine.";
            asinh, asinh_jvp, asinh_vjp, reads x, "composite: mul, add, sqrt, log2", "The inverse hyperbolic sine.";
            acosh, acosh_jvp, acosh_vjp, reads x, "composite: mul, add, sqrt, log2",
                "The inverse hyperbolic cosine (NaN below 1).";
            atanh, atanh_jvp, atanh_vjp, reads x, "composite: add, fdiv, log2",
                "The inverse hyperbolic tangent (NaN outside `[-1, 1]`).";
            asin, asin_jvp, asin_vjp, reads x, "composite: not in the reference", "The inverse sine (NaN outside `[-1, 1]`).";
            acos, acos_jvp, acos_vjp, reads x, "composite: not in the reference", "The inverse cosine (NaN outside `[-1, 1]`).";
            atan, atan_jvp, atan_vjp, reads x, "composite: not in the reference", "The inverse tangent.";
            sign, sign_jvp, sign_vjp, reads x, "composite: cmplt, where",
                "`-1`, `0` or `1` by the sign of `x` (NaN kept); its derivative is zero.";
            signum, signum_jvp, signum_vjp, reads x, "composite: not in the reference",
                "`1` for `+0` and above, `-1` for `-0` and below, NaN kept (as `f64::signum`); its derivative is zero.";
            floor, floor_jvp, floor_vjp, reads x, "composite: not in the reference",
                "The largest integer not above `x`; its derivative is zero.";
            ceil, ceil_jvp, ceil_vjp, reads x, "composite: not in the reference",
                "The smallest integer not below `x`; its derivative is zero.";
            round, round_jvp, round_vjp, reads x, "composite: not in the reference",
                "The nearest integer, halves away from zero (`round(2.5) = 3`, as `f64::round`); its derivative is zero.";
            round_ties_even, round_ties_even_jvp, round_ties_even_vjp, reads x, "composite: not in the reference",
                "The nearest integer, halves to even (`round_ties_even(2.5) = 2`, as `f64::round_ties_even`, NumPy's and PyTorch's `round`); its derivative is zero.";
        }
    };
}

/// The argument a unary rule reads: `x` (input 0) or `y` (the output).
#[doc(hidden)]
#[macro_export]
macro_rules! __unary_reads {
    (x) => {
        $crate::RuleArg::Input(0)
    };
    (y) => {
        $crate::RuleArg::Output
    };
}

/// The partial derivative of a unary function that reads `x` (input 0) or `y` (the output).
#[doc(hidden)]
#[macro_export]
macro_rules! __unary_partial {
    (x) => {
        $crate::Read::Operand(0)
    };
    (y) => {
        $crate::Read::Output
    };
}

macro_rules! unary_defs {
    ($($name:ident, $jvp:ident, $vjp:ident, reads $r:ident, $reference:literal, $doc:literal;)*) => {
        &[$(OpDef {
            name: stringify!($name),
            form: Form::Method,
            kind: Kind::Elementwise,
            params: &[],
            rules: Some(Rules {
                jvp: Rule {
                    name: stringify!($jvp),
                    args: &[__unary_reads!($r), RuleArg::Tangent(0)],
                },
                vjp: &[Rule {
                    name: stringify!($vjp),
                    args: &[RuleArg::Cotangent, __unary_reads!($r)],
                }],
                vjp_into: None,
            }),
            reference: $reference,
            batch: Batching::Elementwise,
            fusion: Some(Fusion {
                eval: Eval::Unary,
                partials: &[Partial {
                    operand: 0,
                    form: "",
                    reads: &[__unary_partial!($r)],
                }],
            }),
        }),*]
    };
}

/// The elementwise functions of one tensor ([`for_each_unary!`]).
pub const UNARY: &[OpDef] = for_each_unary!(unary_defs);

mod table;
pub use table::OTHER;

/// Tensor methods (and `f64::sin_cos`) returning a tuple, each of whose results is an op of the
/// registry: in a `#[differentiable]` function `let (q, r) = a.qr();` is differentiated as
/// `a.qr_q()` and `a.qr_r()` (the runtime's `qr` factors once; the macro calls each op).
pub const TUPLE_METHODS: &[(&str, &[&str])] = &[
    ("slogdet", &["sign_det", "logabsdet"]),
    ("qr", &["qr_q", "qr_r"]),
    ("eigh", &["eigvalsh", "eigh_vectors"]),
    ("svd", &["svd_u", "svdvals", "svd_vh"]),
    ("sin_cos", &["sin", "cos"]),
];

/// Every op of the registry.
pub fn all() -> impl Iterator<Item = &'static OpDef> {
    UNARY.iter().chain(OTHER)
}

/// Rust's names of ops that `f32` and `f64` have under another name than the op's: in a function
/// of numbers, `x.ln_1p()` is the op `log1p`. Each computes what Rust's method computes.
pub const ALIASES: &[(&str, &str)] = &[("ln_1p", "log1p"), ("exp_m1", "expm1")];

/// The op named `name` (or, as a method, by one of its [`ALIASES`]) in the given form, if any.
pub fn lookup(name: &str, form: Form) -> Option<&'static OpDef> {
    let name = match form {
        Form::Method => ALIASES
            .iter()
            .find(|(alias, _)| *alias == name)
            .map_or(name, |(_, op)| op),
        _ => name,
    };
    all().find(|op| op.name == name && op.form == form)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_is_named_after_its_op_and_reads_what_exists() {
        for op in all() {
            let Some(rules) = op.rules else { continue };
            let expected = if op.takes_list() {
                1
            } else {
                op.tensor_inputs()
            };
            assert_eq!(rules.vjp.len(), expected, "{}", op.name);
            if let Some(into) = rules.vjp_into {
                let name = rules.vjp[0].name;
                assert!(
                    into.strip_prefix(name) == Some("_into"),
                    "{} names {into}",
                    op.name
                );
            }
            let configs = op
                .params
                .iter()
                .filter(|p| matches!(p, Param::Config(..)))
                .count();
            for (i, rule) in core::iter::once(&rules.jvp).chain(rules.vjp).enumerate() {
                assert!(
                    rule.name.starts_with(op.name),
                    "{} names {}",
                    op.name,
                    rule.name
                );
                let vjp = i > 0;
                for arg in rule.args {
                    let fits = match *arg {
                        RuleArg::Cotangent => vjp,
                        RuleArg::Output | RuleArg::CastWitness => true,
                        RuleArg::Input(k) | RuleArg::Shape(k) => k < op.tensor_inputs(),
                        RuleArg::Tangent(k) | RuleArg::MaybeTangent(k) => {
                            !vjp && k < op.tensor_inputs()
                        }
                        RuleArg::Config(k) => k < configs,
                        RuleArg::Inputs | RuleArg::ListSizes => op.takes_list(),
                        RuleArg::MaybeTangents => !vjp && op.takes_list(),
                        RuleArg::ListIndex => vjp && op.takes_list(),
                    };
                    assert!(fits, "{}: {} cannot read {arg:?}", op.name, rule.name);
                }
                assert_eq!(
                    rule.args.contains(&RuleArg::Cotangent),
                    vjp,
                    "{}: {}",
                    op.name,
                    rule.name
                );
            }
        }
    }

    /// Each result of a tuple method is a differentiable method of the registry, and the tuple
    /// method is not an op itself.
    #[test]
    fn tuple_methods_split_into_registered_ops() {
        for (method, parts) in TUPLE_METHODS {
            assert!(lookup(method, Form::Method).is_none(), "{method}");
            for part in *parts {
                let op = lookup(part, Form::Method).unwrap_or_else(|| panic!("{part}"));
                assert!(op.differentiable() && op.params.is_empty(), "{part}");
            }
        }
    }

    #[test]
    fn names_are_unique_per_form() {
        for (i, a) in all().enumerate() {
            for b in all().skip(i + 1) {
                assert!(
                    !(a.name == b.name && a.form == b.form),
                    "{} is declared twice",
                    a.name
                );
            }
        }
    }

    #[test]
    fn fusion_is_declared_for_exactly_the_elementwise_ops_and_where_cond() {
        for op in all() {
            let fusible = op.kind == Kind::Elementwise || op.name == "where_cond";
            assert_eq!(op.fusion.is_some(), fusible, "{}: fusion", op.name);
        }
    }

    #[test]
    fn every_partial_is_of_an_operand_and_reads_what_exists() {
        for op in all() {
            let Some(fusion) = op.fusion else { continue };
            let n = op.operands();
            let tensors = op.tensor_inputs();
            assert_eq!(
                fusion.partials.len(),
                tensors,
                "{}: one partial a tensor",
                op.name
            );
            let mut operands: [Option<usize>; 4] = [None; 4];
            for (i, p) in fusion.partials.iter().enumerate() {
                assert!(
                    p.operand < n,
                    "{}: partial in operand {}",
                    op.name,
                    p.operand
                );
                assert!(
                    operands[..i].iter().all(|&o| o != Some(p.operand)),
                    "{}: two partials in operand {}",
                    op.name,
                    p.operand
                );
                operands[i] = Some(p.operand);
                for r in p.reads {
                    if let Read::Operand(k) = r {
                        assert!(*k < n, "{}: a partial reads operand {k}", op.name);
                    }
                }
                // A scalar form is named after its op; one written inline has no name.
                let named = matches!(fusion.eval, Eval::Scalar | Eval::Select);
                assert_eq!(!p.form.is_empty(), named, "{}: partial form", op.name);
                if named {
                    let rest = p
                        .form
                        .strip_prefix(op.name)
                        .and_then(|r| r.strip_prefix('_'));
                    assert!(rest.is_some(), "{}: partial form {}", op.name, p.form);
                }
            }
            // A unary function's partial reads what its rules read.
            if fusion.eval == Eval::Unary {
                let rules = op.rules.expect("a unary function is differentiable");
                let reads_output = rules.vjp[0].reads(RuleArg::Output);
                assert_eq!(
                    fusion.partials[0].reads,
                    if reads_output {
                        &[Read::Output][..]
                    } else {
                        &[Read::Operand(0)][..]
                    },
                    "{}",
                    op.name
                );
            }
        }
    }
}
