//! Analysis: which values the output depends on (only those get adjoints or tangents), and what
//! the backward pass must keep (exactly the inputs, outputs, shapes and constants its rules read).

use std::collections::BTreeSet;

use crate::diag::Errors;
use crate::ir::{Body, Const, Operand, OutputAux, OutputElem, Stmt, Val};
use crate::ops::{self, Keep, Param};

/// What the analysis found.
pub struct Analysis {
    /// Values the differentiated output depends on.
    pub useful: Vec<bool>,
    /// Values whose tensors the backward pass reads.
    pub keep_value: BTreeSet<Val>,
    /// Values whose shapes the backward pass reads.
    pub keep_shape: BTreeSet<Val>,
    /// Constant op inputs the backward pass reads (kept in owned form).
    pub keep_const: BTreeSet<Const>,
    /// Borrowed configuration arguments the backward pass reads (kept in owned form).
    pub keep_config: BTreeSet<Const>,
    /// Ops whose input lengths along the axis the backward pass reads (`concat`).
    pub keep_sizes: BTreeSet<Val>,
    /// Ops whose input element type the backward pass needs (`cast`).
    pub keep_witness: BTreeSet<Val>,
}

impl Analysis {
    pub fn is_useful(&self, v: Val) -> bool {
        self.useful[v.0]
    }
}

/// Runs the analysis; reports values read out of differentiated tensors that reach the output.
pub fn analyse(body: &Body, errors: &mut Errors) -> Analysis {
    let mut useful = vec![false; body.values];
    for out in &body.outputs {
        if let OutputElem::Val(v) = out {
            useful[v.0] = true;
        }
    }
    let _ = &body.aux.as_ref().map(|a| matches!(a, OutputAux::Val(_)));
    for stmt in body.stmts.iter().rev() {
        match stmt {
            Stmt::Op { out, inputs, .. } if useful[out.0] => {
                for v in inputs.iter().filter_map(|i| i.val()) {
                    useful[v.0] = true;
                }
            }
            Stmt::Call { outs, args, .. } if outs.iter().any(|o| useful[o.0]) => {
                for a in args {
                    if let crate::ir::CallArg::Val { val, .. } = a {
                        useful[val.0] = true;
                    }
                }
            }
            _ => {}
        }
    }

    let concretization = "this value is read out of a differentiated tensor, and the result \
        depends on it: its gradient would be silently lost (JAX reports this as a \
        concretization error). Compute it from `stop_gradient(&x)` to cut the gradient on \
        purpose, or keep the computation in tensor ops";
    if let Some(span) = body.output_taint {
        errors.push(span.error(concretization));
    }

    let mut a = Analysis {
        useful,
        keep_value: BTreeSet::new(),
        keep_shape: BTreeSet::new(),
        keep_const: BTreeSet::new(),
        keep_config: BTreeSet::new(),
        keep_sizes: BTreeSet::new(),
        keep_witness: BTreeSet::new(),
    };
    for stmt in &body.stmts {
        match stmt {
            Stmt::Param { out, .. } => {
                a.keep_shape.insert(*out);
            }
            Stmt::Op {
                out,
                op,
                inputs,
                config,
                tainted_by,
                ..
            } if a.useful[out.0] => {
                if let Some(span) = tainted_by {
                    errors.push(span.error(concretization));
                }
                let list = op.params.contains(&Param::TensorList);
                for (i, input) in inputs.iter().enumerate() {
                    if input.val().is_none() {
                        continue;
                    }
                    let template = if list { op.vjp[0] } else { op.vjp[i] };
                    let (_, args) = ops::parse_template(template);
                    for arg in args {
                        let (kind, index) = split_arg(arg);
                        match kind {
                            "y" => {
                                a.keep_value.insert(*out);
                            }
                            "a" => match inputs[index] {
                                Operand::Val(v) => {
                                    a.keep_value.insert(v);
                                }
                                Operand::Const(c) => {
                                    a.keep_const.insert(c);
                                }
                            },
                            "s" => {
                                if let Some(v) = inputs[index].val() {
                                    a.keep_shape.insert(v);
                                }
                            }
                            "c" => {
                                if let Some(Keep::Owned) = config_keep(op, index) {
                                    a.keep_config.insert(config[index]);
                                }
                            }
                            "sizes" => {
                                a.keep_sizes.insert(*out);
                            }
                            "w" => {
                                a.keep_witness.insert(*out);
                            }
                            _ => {}
                        }
                    }
                }
            }
            Stmt::Call { outs, .. } if outs.iter().any(|o| a.useful[o.0]) => {
                for o in outs {
                    a.keep_shape.insert(*o);
                }
            }
            _ => {}
        }
    }
    a
}

/// `"a1"` → `("a", 1)`; `"sizes"` → `("sizes", 0)`.
pub fn split_arg(arg: &str) -> (&str, usize) {
    let digits = arg.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    if digits.is_empty() || digits.len() == arg.len() {
        return (arg, 0);
    }
    let kind = &arg[..arg.len() - digits.len()];
    (kind, digits.parse().expect("template index"))
}

/// How configuration argument `index` of `op` is kept.
pub fn config_keep(op: &ops::OpSpec, index: usize) -> Option<Keep> {
    op.params
        .iter()
        .filter_map(|p| match p {
            Param::Config(_, keep) => Some(*keep),
            _ => None,
        })
        .nth(index)
}
