//! The op table, as the macro sees it: the registry of `rune-ops` (which method and function
//! names are differentiable primitives, how their arguments split into tensor inputs and
//! configuration, and the arguments of each rule call), and the names of tensor methods that
//! are not ops.
//!
//! The runtime reads the same registry (`rune_runtime::all_ops()`), so the two cannot drift.

pub use rune_ops::{Eval, Form, Keep, OpDef as OpSpec, Param, Partial, Read, Rule, RuleArg};

/// Tensor methods that read only shape metadata: always constant, never a concretization.
pub const METADATA: &[&str] = &["shape", "ndim", "len", "is_empty", "is_some", "is_none"];

/// Tensor methods whose results are constants by nature (masks, indices, tensors of zeros or
/// ones shaped like the receiver).
pub const NONDIFF: &[&str] = &[
    "lt",
    "gt",
    "le",
    "ge",
    "eq",
    "ne",
    "argmax",
    "argmin",
    "argsort",
    "zeros_like",
    "ones_like",
];

/// Tensor methods that read an active tensor's numbers: the gradient cannot flow through them.
pub const CONCRETIZING: &[&str] = &["item", "to_vec", "to_array", "view", "as_shared", "map"];

/// The ops giving each result of a method that returns a tuple (`qr` → `qr_q`, `qr_r`).
pub fn tuple_parts(name: &str) -> Option<&'static [&'static str]> {
    rune_ops::TUPLE_METHODS
        .iter()
        .find(|(method, _)| *method == name)
        .map(|(_, parts)| *parts)
}

/// The differentiable op named `name` in the given form, if any.
pub fn lookup(name: &str, form: Form) -> Option<&'static OpSpec> {
    rune_ops::lookup(name, form).filter(|op| op.differentiable())
}

/// The rules of a differentiable op.
pub fn rules(op: &OpSpec) -> rune_ops::Rules {
    op.rules
        .expect("only differentiable ops are looked up (see `lookup`)")
}

/// The names of all differentiable ops users call as methods, for error messages.
pub fn method_names() -> Vec<&'static str> {
    rune_ops::all()
        .filter(|op| op.form == Form::Method && op.differentiable())
        .map(|op| op.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The methods the macro takes as constants by nature are the registry's comparisons, index
    /// reductions and constructors called on a tensor.
    #[test]
    fn nondiff_methods_are_the_registrys() {
        let registry: Vec<&str> = rune_ops::all()
            .filter(|op| {
                op.form == Form::Method
                    && !op.differentiable()
                    && matches!(
                        op.kind,
                        rune_ops::Kind::Comparison
                            | rune_ops::Kind::Indexing
                            | rune_ops::Kind::Constructor
                    )
            })
            .map(|op| op.name)
            .collect();
        assert_eq!(registry, NONDIFF);
    }
}
