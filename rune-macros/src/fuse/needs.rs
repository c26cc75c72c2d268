//! What a fused region's backward pass reads, from the registry's partials.

use crate::ir::{FusedArg, FusedNode, Operand};
use crate::ops::Read;

/// What the backward pass of a fused region reads besides the cotangent: for each input,
/// op and literal, whether its value is needed (the others' values are never computed there).
/// The cotangents of every input that is a value are computed (the analysis makes each of them
/// useful), and a partial derivative reads only what its formula names: `a + b` nothing, `a * b`
/// the other operand, `a / b` the divisor and the quotient, a unary function its input or its
/// output, each as its [`rune_ops::Partial`] in the registry says. An input whose value is not
/// needed is passed by its shape alone, so that the forward pass keeps no tensor for it.
pub struct Needs {
    pub inputs: Vec<bool>,
    pub nodes: Vec<bool>,
    pub literals: Vec<bool>,
}

impl Needs {
    pub fn of(inputs: &[Operand], literals: usize, nodes: &[FusedNode]) -> Self {
        let mut needs = Needs {
            inputs: vec![false; inputs.len()],
            nodes: vec![false; nodes.len()],
            literals: vec![false; literals],
        };
        let wanted = |a: FusedArg| match a {
            FusedArg::Input(i) => inputs[i].val().is_some(),
            FusedArg::Node(_) => true,
            FusedArg::Literal(_) | FusedArg::Int(_) => false,
        };
        // Each partial whose operand has a cotangent reads what the registry says it reads.
        // A comparison has no fusion entry and no derivative.
        for (j, n) in nodes.iter().enumerate() {
            let Some(fusion) = n.op.fusion else { continue };
            for p in fusion.partials.iter().filter(|p| wanted(n.args[p.operand])) {
                for r in p.reads {
                    match *r {
                        Read::Operand(k) => needs.mark(n.args[k]),
                        Read::Output => needs.nodes[j] = true,
                    }
                }
            }
        }
        // An op recomputed needs the values it reads.
        for j in (0..nodes.len()).rev() {
            if needs.nodes[j] {
                for &a in &nodes[j].args {
                    needs.mark(a);
                }
            }
        }
        needs
    }

    fn mark(&mut self, a: FusedArg) {
        match a {
            FusedArg::Input(i) => self.inputs[i] = true,
            FusedArg::Node(j) => self.nodes[j] = true,
            FusedArg::Literal(k) => self.literals[k] = true,
            FusedArg::Int(_) => {}
        }
    }
}
