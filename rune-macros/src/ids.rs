//! The numbers the IR names its values, constants, slots and lists by. Apart from the IR
//! (`crate::ir`, which re-exports them) so that `crate::names`, which writes and reads the
//! generated identifiers for them, needs nothing else of it.

/// A differentiated value: a `Tensor` local of the generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Val(pub usize);

/// A hoisted constant: `let __rune_cN = <expr>;`, usable as an op input or configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Const(pub usize);

/// A mutable differentiated variable: one assigned inside a branch or a loop (loop-carried,
/// or merged after a branch). Reads and writes are explicit statements; the backward pass gives
/// it one adjoint that reads add to and writes hand over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Slot(pub usize);

/// A local `Vec` of differentiated tensors (`let mut outs = Vec::new(); outs.push(h);`): a
/// Rust `Vec` in the forward pass, a `Vec` of optional adjoints in the backward pass, a `Vec`
/// of tangents in forward mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct List(pub usize);
