//! Analysis: which values the output depends on (only those get adjoints or tangents), and what
//! the backward pass must keep (exactly the inputs, outputs, shapes and constants its rules read).

use std::collections::BTreeSet;

use crate::diag::{Errors, CONCRETIZATION};
use crate::ir::{
    path_consts, walk, walk_rev, Body, CallArg, Const, List, Operand, OutputElem, Slot, Stmt, Val,
};
use crate::ops::{self, Keep, Param, RuleArg};

/// What the analysis found.
pub struct Analysis {
    /// Values the differentiated output depends on.
    pub useful: Vec<bool>,
    /// Slots the differentiated output depends on.
    pub useful_slots: Vec<bool>,
    /// Lists the differentiated output depends on.
    pub useful_lists: Vec<bool>,
    /// Values whose tensors the backward pass reads.
    pub keep_value: BTreeSet<Val>,
    /// Values whose shapes the backward pass reads.
    pub keep_shape: BTreeSet<Val>,
    /// Constant op inputs the backward pass reads (kept in owned form).
    pub keep_const: BTreeSet<Const>,
    /// Configuration arguments the backward pass reads (kept in owned form).
    pub keep_config: BTreeSet<Const>,
    /// Ops whose input lengths along the axis the backward pass reads (`concat`).
    pub keep_sizes: BTreeSet<Val>,
    /// Ops whose input element type the backward pass needs (`cast`).
    pub keep_witness: BTreeSet<Val>,
    /// Constants hoisted outside every branch and loop: the backward pass reads the copy saved
    /// where they are defined, once, instead of one saved by each use (`dt` read by every step
    /// of a loop).
    pub top_consts: BTreeSet<Const>,
}

impl Analysis {
    pub fn is_useful(&self, v: Val) -> bool {
        self.useful[v.0]
    }
    pub fn slot_useful(&self, s: Slot) -> bool {
        self.useful_slots[s.0]
    }
    pub fn list_useful(&self, l: List) -> bool {
        self.useful_lists[l.0]
    }
}

/// Runs the analysis; reports values read out of differentiated tensors that reach the output.
pub fn analyse(body: &Body, errors: &mut Errors) -> Analysis {
    let mut useful = vec![false; body.values];
    let mut useful_slots = vec![false; body.slots];
    let mut useful_lists = vec![false; body.lists.len()];
    for out in &body.outputs {
        if let OutputElem::Val(v) = out {
            useful[v.0] = true;
        }
    }
    // Loops and slots make the dependence cyclic: iterate to a fixed point, each pass from the
    // end of the body to its start.
    loop {
        let mut changed = false;
        let mut mark = |flags: &mut Vec<bool>, i: usize| {
            if !flags[i] {
                flags[i] = true;
                changed = true;
            }
        };
        walk_rev(&body.stmts, &mut |s| match s {
            Stmt::Op { out, inputs, .. } | Stmt::Fused { out, inputs, .. } if useful[out.0] => {
                for v in inputs.iter().filter_map(|i| i.val()) {
                    mark(&mut useful, v.0);
                }
            }
            Stmt::Call { outs, args, .. } if outs.iter().any(|o| useful[o.0]) => {
                for a in args {
                    match a {
                        CallArg::Val { val, .. } => mark(&mut useful, val.0),
                        CallArg::Array { list, .. } => mark(&mut useful_lists, list.0),
                        CallArg::Struct { root, .. } => {
                            if let Some(v) = body.call_roots.get(root) {
                                mark(&mut useful, v.0);
                            }
                        }
                        CallArg::Const(_) => {}
                    }
                }
            }
            Stmt::Leaf { out, root, .. } if useful[out.0] => {
                if let Some(v) = body.call_roots.get(root) {
                    mark(&mut useful, v.0);
                }
            }
            Stmt::SlotRead { out, slot } if useful[out.0] => mark(&mut useful_slots, slot.0),
            Stmt::ListGet { out, list, .. } | Stmt::ListOp { out, list, .. } if useful[out.0] => {
                mark(&mut useful_lists, list.0)
            }
            Stmt::ListPush {
                list,
                val: Operand::Val(v),
                ..
            } if useful_lists[list.0] => mark(&mut useful, v.0),
            Stmt::SlotWrite {
                slot,
                val: Operand::Val(v),
            }
            | Stmt::SlotInit {
                slot,
                init: Operand::Val(v),
            } if useful_slots[slot.0] => mark(&mut useful, v.0),
            _ => {}
        });
        if !changed {
            break;
        }
    }

    if let Some(t) = body.output_taint {
        errors.push(t.error(CONCRETIZATION));
    }

    let mut a = Analysis {
        useful,
        useful_slots,
        useful_lists,
        keep_value: BTreeSet::new(),
        keep_shape: BTreeSet::new(),
        keep_const: BTreeSet::new(),
        keep_config: BTreeSet::new(),
        keep_sizes: BTreeSet::new(),
        keep_witness: BTreeSet::new(),
        top_consts: body
            .stmts
            .iter()
            .filter_map(|s| match s {
                Stmt::Hoist { id, .. } => Some(*id),
                _ => None,
            })
            .collect(),
    };
    let mut reported = false;
    walk(&body.stmts, &mut |stmt| match stmt {
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
            if let (Some(t), false) = (tainted_by, reported) {
                errors.push(t.error(CONCRETIZATION));
                reported = true;
            }
            let list = op.params.contains(&Param::TensorList);
            for (i, input) in inputs.iter().enumerate() {
                if input.val().is_none() {
                    continue;
                }
                let rules = ops::rules(op);
                let rule = if list { rules.vjp[0] } else { rules.vjp[i] };
                for arg in rule.args {
                    match *arg {
                        RuleArg::Output => {
                            a.keep_value.insert(*out);
                        }
                        RuleArg::Input(index) => match inputs[index] {
                            Operand::Val(v) => {
                                a.keep_value.insert(v);
                            }
                            Operand::Const(c) => {
                                a.keep_const.insert(c);
                            }
                        },
                        RuleArg::Shape(index) => {
                            if let Some(v) = inputs[index].val() {
                                a.keep_shape.insert(v);
                            }
                        }
                        RuleArg::Config(index) => {
                            a.keep_config.insert(config[index]);
                        }
                        RuleArg::ListSizes => {
                            a.keep_sizes.insert(*out);
                        }
                        RuleArg::CastWitness => {
                            a.keep_witness.insert(*out);
                        }
                        // The cotangent is the backward pass's own; tangents are forward mode's;
                        // a list's inputs are its `Input`s and its index a number.
                        RuleArg::Cotangent
                        | RuleArg::Tangent(_)
                        | RuleArg::MaybeTangent(_)
                        | RuleArg::Inputs
                        | RuleArg::MaybeTangents
                        | RuleArg::ListIndex => {}
                    }
                }
            }
        }
        // The backward pass of a fused region reads the values its partial derivatives name
        // and the shapes of the other inputs, and that of a region reduced over some axes their
        // configuration; that of a fully reduced region only the partial derivatives its
        // forward pass computed (`Saved::Partials`).
        Stmt::Fused {
            out,
            inputs,
            literals,
            nodes,
            reduce,
            axes,
            ..
        } if a.useful[out.0] && (reduce.is_none() || axes.is_some()) => {
            if let Some(axes) = axes {
                a.keep_config.extend([axes.axes, axes.keepdims]);
            }
            let needs = crate::fuse::Needs::of(inputs, literals.len(), nodes);
            for (input, needed) in inputs.iter().zip(needs.inputs) {
                match *input {
                    Operand::Val(v) if needed => a.keep_value.insert(v),
                    Operand::Val(v) => a.keep_shape.insert(v),
                    Operand::Const(c) => a.keep_const.insert(c),
                };
            }
        }
        Stmt::Call { outs, args, .. } if outs.iter().any(|o| a.useful[o.0]) => {
            for o in outs {
                a.keep_shape.insert(*o);
            }
            for arg in args {
                if let CallArg::Struct { path, .. } = arg {
                    a.keep_const.extend(path_consts(path));
                }
            }
        }
        Stmt::Leaf { out, path, .. } if a.useful[out.0] => {
            a.keep_const.extend(path_consts(path));
        }
        Stmt::ListPush { list, index, .. } if a.useful_lists[list.0] => {
            a.keep_const.insert(*index);
        }
        Stmt::ListGet { out, index, .. } if a.useful[out.0] => {
            a.keep_const.insert(*index);
        }
        Stmt::ListOp {
            out,
            op,
            config,
            count,
            ..
        } if a.useful[out.0] => {
            a.keep_const.insert(*count);
            a.keep_config.extend(config.iter().copied());
            if op.name == "concat" {
                a.keep_sizes.insert(*out);
            }
        }
        _ => {}
    });
    a
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
