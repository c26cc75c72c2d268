//! The op table, as the macro sees it: the registry of `rune-ops` (which method and function
//! names are differentiable primitives, how their arguments split into tensor inputs and
//! configuration, and the arguments of each rule call), and the names of tensor methods that
//! are not ops.
//!
//! The runtime reads the same registry (`rune_runtime::all_ops()`), so the two cannot drift.

pub use rune_ops::{Eval, Form, Keep, OpDef as OpSpec, Param, Partial, Read, Rule, RuleArg};

/// Tensor methods that read only shape metadata: always constant, never a concretization.
pub const METADATA: &[&str] = &["shape", "ndim", "len", "is_empty", "is_some", "is_none"];

/// What `vmap`'s batched twins write for `len`: one example's (`rune_runtime::vmap`); and what
/// a call of a batched function inside a differentiated one reads of a `Batch` argument, its
/// number of examples (`crate::vmap::batched_calls`).
const VMAP_METADATA: &[&str] = &["example_len", "vmap_len"];

/// Methods of a map of parameters that read which keys it has: constants, as shape metadata.
const MAP_METADATA: &[&str] = &["keys", "contains_key"];

/// Whether `method` reads only metadata: a tensor's shape, or a map's keys.
pub fn is_metadata(method: &str) -> bool {
    METADATA.contains(&method) || MAP_METADATA.contains(&method) || VMAP_METADATA.contains(&method)
}

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

/// Methods of other array libraries (PyTorch, JAX, NumPy) and what to write here instead.
const OTHER_SPELLINGS: &[(&str, &str)] = &[
    ("log", "`ln`"),
    ("log10", "`ln() / 10f64.ln()`"),
    ("mm", "`matmul`"),
    ("bmm", "`matmul` (batch axes broadcast)"),
    ("view", "`reshape`"),
    ("flatten", "`reshape(&[-1])`"),
    ("unsqueeze", "`expand_dims`"),
    ("swapaxes", "`transpose(a, b)`"),
    ("clip", "`clamp`"),
    ("amax", "`max_axes`"),
    ("amin", "`min_axes`"),
    (
        "embedding",
        "`embedding(&ids, &weight)` (a function, as `F.embedding`)",
    ),
];

/// A hint for an unknown method `name`: how another library's method is written here, or the
/// supported name nearest by edit distance (a typo).
pub fn closest_spelling(name: &str) -> Option<String> {
    if let Some((_, here)) = OTHER_SPELLINGS.iter().find(|(other, _)| *other == name) {
        return Some(format!("write {here}"));
    }
    let candidates = method_names()
        .into_iter()
        .chain(METADATA.iter().copied())
        .chain(NONDIFF.iter().copied())
        .chain(rune_ops::ALIASES.iter().map(|(alias, _)| *alias))
        .chain(rune_ops::TUPLE_METHODS.iter().map(|(method, _)| *method));
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .map(|c| (edit_distance(name, c), c))
        .filter(|&(d, _)| d <= limit)
        .min()
        .map(|(_, c)| format!("did you mean `{c}`?"))
}

/// The Levenshtein distance between `a` and `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
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

    #[test]
    fn unknown_methods_get_the_closest_spelling() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        let hint = |name| closest_spelling(name).unwrap_or_default();
        assert_eq!(hint("sofmax"), "did you mean `softmax`?");
        assert_eq!(hint("matmull"), "did you mean `matmul`?");
        assert_eq!(hint("unsqueeze"), "write `expand_dims`");
        assert_eq!(hint("swapaxes"), "write `transpose(a, b)`");
        assert_eq!(
            hint("embedding"),
            "write `embedding(&ids, &weight)` (a function, as `F.embedding`)"
        );
        assert_eq!(hint("index_selct"), "did you mean `index_select`?");
        assert_eq!(hint("layernorm"), "did you mean `layer_norm`?");
        assert_eq!(hint("masked_fill_"), "did you mean `masked_fill`?");
        assert_eq!(closest_spelling("bessel_j0"), None);
        // Every spelling named for another library's method is a method here, or says how.
        for (other, _) in OTHER_SPELLINGS {
            assert!(lookup(other, Form::Method).is_none(), "{other} is an op");
        }
    }

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
