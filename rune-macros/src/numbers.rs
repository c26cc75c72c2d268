//! Functions of numbers: which functions are written on plain numbers instead of 0-d tensors.
//!
//! A function qualifies when every differentiated parameter is an `f32`/`f64` number (or an
//! array of them, read element by element), it returns numbers, it uses no option that brings
//! its own code (`custom_vjp`, `custom_jvp`, `checkpoint`, `has_aux`) and fusion is on; and when
//! its lowered body, with every elementwise op made a fused region (`crate::fuse::fuse` with
//! `singletons`), holds nothing but constant code, parameters, reads of an array parameter's
//! elements, slots, branches, loops, regions without a reduction or a mask, and calls of other
//! differentiable functions (which, called with numbers in the user's code, take and return
//! numbers). Each value is then a number; the emitter writes the same statements with the
//! runtime's number functions (`rune_runtime::generated::number_map`, `accumulate_number`, ..),
//! so that neither pass makes a tensor. Any other function, and any body with another
//! statement (an op that is not elementwise, a local `Vec`), is written on tensors as before.

use crate::diag::Errors;
use crate::ir::{Body, Stmt};
use crate::parse::{Options, Signature};

/// The numbers stage: the function's body lowered again with every elementwise op a fused
/// region, if the function can be written on numbers (its signature and options allow it, and
/// nothing else is in that body). Lowering it the first time reports the body's errors.
pub fn lower_on_numbers(sig: &Signature, block: &syn::Block, options: &Options) -> Option<Body> {
    if !signature_allows(sig, options) {
        return None;
    }
    let mut body = crate::lower::lower(sig, block, &mut Errors::default());
    crate::fuse::fuse(&mut body, true);
    body_allows(&body).then_some(body)
}

/// Whether the signature and options allow a function of numbers.
fn signature_allows(sig: &Signature, options: &Options) -> bool {
    options.fuses()
        && !options.has_aux
        && !options.checkpoint
        && options.custom_vjp.is_none()
        && options.custom_jvp.is_none()
        && sig.fallible.is_none()
        && sig.scalar_out
        && sig.active().all(|(_, a)| a.scalar && !a.structure)
        && sig.active().next().is_some()
}

/// Whether every statement of a body fused with singletons can be written on numbers.
fn body_allows(body: &Body) -> bool {
    fn stmts_allow(stmts: &[Stmt]) -> bool {
        stmts.iter().all(|s| match s {
            Stmt::Verbatim(_)
            | Stmt::Hoist { .. }
            | Stmt::Param { .. }
            | Stmt::ArrayParam { .. }
            | Stmt::ListGet { .. }
            | Stmt::SlotInit { .. }
            | Stmt::SlotRead { .. }
            | Stmt::SlotWrite { .. } => true,
            Stmt::Fused { reduce, nodes, .. } => {
                // A `where_cond` whose mask is an input reads a tensor of flags.
                reduce.is_none()
                    && nodes.iter().all(|n| {
                        n.op.name != "where_cond"
                            || !matches!(n.args[0], crate::ir::FusedArg::Input(_))
                    })
            }
            Stmt::Branch { arms, .. } => arms.iter().all(|a| stmts_allow(a)),
            Stmt::Stages { stages, .. } => stages.iter().all(|s| stmts_allow(s)),
            Stmt::Loop { body, .. } => stmts_allow(body),
            Stmt::StructParam { .. }
            | Stmt::Leaf { .. }
            | Stmt::Op { .. }
            | Stmt::ListNew { .. }
            | Stmt::ListPush { .. }
            | Stmt::ListOp { .. } => false,
            // The callee takes and returns numbers, as the user's code passes them.
            Stmt::Call { args, .. } => args
                .iter()
                .all(|a| !matches!(a, crate::ir::CallArg::Struct { .. })),
        })
    }
    body.aux.is_none() && stmts_allow(&body.stmts)
}
