//! The intermediate representation: the body as a list of statements in SSA form.
//!
//! Differentiated values (`Val`) are numbered once and never reassigned; everything that does not
//! depend on a differentiated parameter stays Rust code, evaluated as written (`Verbatim`,
//! `Hoist`). Every op keeps the span of the source that produced it.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::Ident;

pub use crate::ids::{Const, List, Slot, Val};
use crate::ops::OpSpec;

/// Constant code: Rust tokens the generated code holds as written (a `let` of the user's, a
/// condition, a loop's range), with the values and constants they name, found once when the code
/// is made. The passes read those, not the tokens: whether a value escapes a fused region,
/// which constants a statement reads.
#[derive(Clone)]
pub struct Code {
    tokens: TokenStream,
    vals: Vec<Val>,
    consts: Vec<Const>,
}

impl Code {
    pub fn new(tokens: TokenStream) -> Self {
        let (mut vals, mut consts) = (Vec::new(), Vec::new());
        fn scan(t: TokenStream, vals: &mut Vec<Val>, consts: &mut Vec<Const>) {
            for tt in t {
                match tt {
                    TokenTree::Ident(i) => {
                        vals.extend(crate::names::val_of(&i));
                        consts.extend(crate::names::const_of(&i));
                    }
                    TokenTree::Group(g) => scan(g.stream(), vals, consts),
                    TokenTree::Punct(_) | TokenTree::Literal(_) => {}
                }
            }
        }
        scan(tokens.clone(), &mut vals, &mut consts);
        Code {
            tokens,
            vals,
            consts,
        }
    }

    pub fn tokens(&self) -> &TokenStream {
        &self.tokens
    }

    /// The values the code names, once for each time it names one.
    pub fn vals(&self) -> &[Val] {
        &self.vals
    }

    /// The constants the code names, once for each time it names one.
    pub fn consts(&self) -> &[Const] {
        &self.consts
    }
}

impl From<TokenStream> for Code {
    fn from(tokens: TokenStream) -> Self {
        Code::new(tokens)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.tokens.fmt(f)
    }
}

impl ToTokens for Code {
    fn to_tokens(&self, out: &mut TokenStream) {
        self.tokens.to_tokens(out);
    }
}

/// Where a value was read out of a differentiated tensor (`item`, `to_vec`, indexing): the first
/// and last token of that expression, for an error underlining all of it.
#[derive(Clone, Copy, Debug)]
pub struct Taint(Span, Span);

impl Taint {
    /// The taint of expression `e`.
    pub fn of<T: quote::ToTokens>(e: &T) -> Self {
        let tokens: Vec<_> = e.to_token_stream().into_iter().collect();
        let first = tokens.first().map_or_else(Span::call_site, |t| t.span());
        let last = tokens.last().map_or(first, |t| t.span());
        Taint(first, last)
    }

    /// An error covering the expression.
    pub fn error(&self, message: &str) -> syn::Error {
        let mut a = proc_macro2::Ident::new("a", self.0);
        let b = proc_macro2::Ident::new("b", self.1);
        a.set_span(self.0);
        syn::Error::new_spanned(quote::quote!(#a #b), message)
    }
}

/// An op input: a differentiated value or a constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    Val(Val),
    Const(Const),
}

impl Operand {
    pub fn val(self) -> Option<Val> {
        match self {
            Operand::Val(v) => Some(v),
            Operand::Const(_) => None,
        }
    }
}

/// How a hoisted constant is written where it is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// As it is (a reference already, or a `Copy` configuration value).
    Plain,
    /// Borrowed: `&__rune_cN`.
    Borrowed,
    /// A tensor input of an op in a function of numbers (`x.hypot(1.0)`): on 0-d tensors a
    /// number becomes one (`number_tensor`), borrowed; on numbers it stays a number.
    NumberOperand,
}

/// One step of a path into a structure parameter: `.field` or `[index]`.
#[derive(Clone)]
pub enum PathSeg {
    Field(syn::Member),
    /// An index held by a hoisted constant.
    Index(Const),
    /// A key of a map (`params["w"]`, `params.get(&name).unwrap()`) held by a hoisted constant:
    /// a reference to the key, which the backward pass keeps owned.
    Key(Const),
    /// A position or a key, whichever the collection takes (`model.layers[name]`: the macro
    /// sees the field's name, not whether it is a `Vec` or a map), held by a hoisted constant
    /// and reached through `rune_runtime::PartAt`.
    Part(Const),
    /// The value inside an `Option` known to be `Some` (an arm of `match opt { Some(x) => .. }`).
    Some,
}

/// An argument of a call to another differentiable function.
#[derive(Clone)]
pub enum CallArg {
    /// A (part of a) structure parameter, passed borrowed or (cloned) owned.
    Struct {
        root: usize,
        path: Vec<PathSeg>,
        borrowed: bool,
    },
    /// A differentiated value, passed borrowed or (cloned) owned as the user wrote it.
    Val { val: Val, borrowed: bool },
    /// A constant expression, passed as written.
    Const(Code),
    /// An array parameter passed whole (`norm(&x)`), as written: the parameter itself, whose
    /// elements are list `list` inside.
    Array {
        list: List,
        tokens: Code,
        borrowed: bool,
    },
}

/// One statement.
pub enum Stmt {
    /// Constant code, emitted as written (with renamed bindings).
    Verbatim(Code),
    /// `let __rune_cN[: ty] = expr;`
    Hoist {
        id: Const,
        expr: Code,
        ty: Option<Code>,
        /// How the constant is written in the forward op.
        usage: Use,
    },
    /// A differentiated parameter enters: `let __rune_vN = <param>` (cloned if borrowed).
    Param {
        out: Val,
        ident: Ident,
        borrowed: bool,
        /// A number parameter, entering as a 0-d tensor.
        scalar: bool,
    },
    /// A differentiated array of numbers (`[f64; N]`) enters as the list `list` of its
    /// elements, which the body reads by index.
    ArrayParam {
        list: List,
        ident: Ident,
        borrowed: bool,
    },
    /// A differentiated structure parameter enters (number `root`).
    StructParam {
        root: usize,
        ident: Ident,
        borrowed: bool,
    },
    /// A leaf tensor of a structure parameter: `out = root.path`.
    Leaf {
        out: Val,
        root: usize,
        path: Vec<PathSeg>,
        /// The user's expression reading it.
        span: Span,
    },
    /// A primitive op.
    Op {
        out: Val,
        op: &'static OpSpec,
        inputs: Vec<Operand>,
        config: Vec<Const>,
        /// `::<..>` on a method call (`cast::<f64>()`).
        turbofish: Option<TokenStream>,
        span: Span,
        /// Where a value read out of a differentiated tensor (`item`, `to_vec`) flows into this
        /// op: an error if the op's result reaches the output.
        tainted_by: Option<Taint>,
        /// Written `x.try_op(..)?`: the forward pass calls the `try_` twin and returns its error.
        fallible: bool,
    },
    /// `let mut slot = init;` (an output slot starts empty instead).
    SlotInit { slot: Slot, init: Operand },
    /// `out = slot` (a copy of the variable's current value).
    SlotRead { out: Val, slot: Slot },
    /// `slot = val`.
    SlotWrite { slot: Slot, val: Operand },
    /// A branch on a constant condition; the backward pass replays the arm taken.
    Branch {
        id: usize,
        head: BranchHead,
        arms: Vec<Vec<Stmt>>,
    },
    /// The rest of a block after a statement that may leave early (`return`, `break`,
    /// `continue`), cut after each further such statement: stage `k` runs when no flag is set
    /// after stage `k - 1`, and the backward pass replays the stages that ran. Flat, however
    /// many early exits the block has; the stages share one scope.
    Stages {
        id: usize,
        /// True while no flag is set (`!(returned || brk || cont)`).
        guard: Code,
        stages: Vec<Vec<Stmt>>,
    },
    /// A loop over constants; the backward pass replays its trip count in reverse.
    Loop {
        id: usize,
        head: LoopHead,
        body: Vec<Stmt>,
    },
    /// `let mut ident = init;` for a list (`init` is the user's `Vec::new()` or the like).
    ListNew {
        list: List,
        ident: Ident,
        init: Code,
    },
    /// `ident.push(val)`, `index` the list's length before the push; or, when `replace`,
    /// `ident[index] = val` (the element there before is read by no one after).
    ListPush {
        list: List,
        val: Operand,
        index: Const,
        replace: bool,
    },
    /// `out = ident[index]`.
    ListGet { out: Val, list: List, index: Const },
    /// `out = op(&[every element], config..)` for `stack` and `concat`; `count` holds the list's
    /// length.
    ListOp {
        out: Val,
        op: &'static OpSpec,
        list: List,
        config: Vec<Const>,
        count: Const,
        span: Span,
    },
    /// A tree of elementwise ops evaluated in one pass (`crate::fuse`): `out` is the last of
    /// `nodes`, whose intermediate values nothing else reads.
    Fused {
        out: Val,
        /// The region's inputs, each once.
        inputs: Vec<Operand>,
        /// Number literals the region reads, as written.
        literals: Vec<TokenStream>,
        /// The ops, each after the ops it reads.
        nodes: Vec<FusedNode>,
        /// The user's expression of the last elementwise op.
        span: Span,
        /// A reduction that ends the region: `out` is then its result, and the last node's
        /// value is never a tensor.
        reduce: Option<Reduction>,
        /// The axes of that reduction (`sum_axes`, `mean_axes`); `None` for a full one.
        axes: Option<ReduceAxes>,
    },
    /// A call of another `#[differentiable]` function.
    Call {
        outs: Vec<Val>,
        /// How the results nest (`outs` are its leaves in order): one value, a tuple, or a
        /// tuple holding tuples (`let (loss, (gw, gb)) = g_value_and_grad(w, b);`).
        shape: OutShape,
        callee: Callee,
        /// The arguments; a method's receiver comes first.
        args: Vec<CallArg>,
        span: Span,
        /// Written `g(..)?`: the callee returns a `Result`, whose error the caller returns.
        fallible: bool,
    },
}

impl Stmt {
    /// Calls `f` on each piece of constant code this statement itself holds (not those of the
    /// statements it holds).
    pub fn for_each_code(&self, f: &mut impl FnMut(&Code)) {
        match self {
            Stmt::Verbatim(c) | Stmt::Stages { guard: c, .. } | Stmt::ListNew { init: c, .. } => {
                f(c)
            }
            Stmt::Hoist { expr, ty, .. } => {
                f(expr);
                ty.iter().for_each(f);
            }
            Stmt::Branch { head, .. } => match head {
                BranchHead::If(c) => f(c),
                BranchHead::Match {
                    scrutinee,
                    patterns,
                } => {
                    f(scrutinee);
                    patterns.iter().for_each(f);
                }
            },
            Stmt::Loop {
                head: LoopHead::For { pattern, iter },
                ..
            } => {
                f(pattern);
                f(iter);
            }
            Stmt::Call { args, .. } => {
                for a in args {
                    if let CallArg::Const(c) | CallArg::Array { tokens: c, .. } = a {
                        f(c);
                    }
                }
            }
            _ => {}
        }
    }

    /// Calls `f` on each differentiated value this statement itself reads (not those of the
    /// statements it holds).
    pub fn read_vals(&self, f: &mut impl FnMut(Val)) {
        match self {
            Stmt::Op { inputs, .. } | Stmt::Fused { inputs, .. } => {
                inputs.iter().filter_map(|o| o.val()).for_each(f)
            }
            Stmt::SlotInit { init: val, .. }
            | Stmt::SlotWrite { val, .. }
            | Stmt::ListPush { val, .. } => val.val().into_iter().for_each(f),
            Stmt::Call { args, .. } => {
                for arg in args {
                    if let CallArg::Val { val, .. } = arg {
                        f(*val);
                    }
                }
            }
            _ => {}
        }
    }
}

/// A full reduction ending a fused region (`rune_runtime::generated::Reduction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// `.sum()`.
    Sum,
    /// `.mean()`.
    Mean,
}

/// The axes a reduction ending a fused region reduces (`x.sum_axes(axes, keepdims)`): its op,
/// whose registry entry says how the backward pass keeps the configuration, and the two
/// configuration constants.
#[derive(Clone, Copy)]
pub struct ReduceAxes {
    pub op: &'static OpSpec,
    pub axes: Const,
    pub keepdims: Const,
}

/// What an op of a fused region reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FusedArg {
    /// Input `i` of the region.
    Input(usize),
    /// The value of op `j` of the region.
    Node(usize),
    /// Literal `k` of the region.
    Literal(usize),
    /// An integer, written where it is used (the exponent of `powi`).
    Int(i32),
}

/// One op of a fused region.
pub struct FusedNode {
    pub op: &'static OpSpec,
    pub args: Vec<FusedArg>,
}

/// How a call's results nest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutShape {
    /// One value.
    One,
    /// A tuple of these.
    Tuple(Vec<OutShape>),
}

impl OutShape {
    /// `n` values: one, or a flat tuple.
    pub fn flat(n: usize) -> Self {
        match n {
            1 => OutShape::One,
            n => OutShape::Tuple(vec![OutShape::One; n]),
        }
    }

    /// The number of values.
    pub fn leaves(&self) -> usize {
        match self {
            OutShape::One => 1,
            OutShape::Tuple(parts) => parts.iter().map(OutShape::leaves).sum(),
        }
    }

    /// Each value's position: the tuple indices leading to it (`[1, 0]` for `gw` above).
    pub fn paths(&self) -> Vec<Vec<usize>> {
        match self {
            OutShape::One => vec![Vec::new()],
            OutShape::Tuple(parts) => parts
                .iter()
                .enumerate()
                .flat_map(|(i, part)| {
                    part.paths().into_iter().map(move |mut p| {
                        p.insert(0, i);
                        p
                    })
                })
                .collect(),
        }
    }

    /// `leaves` (one token stream a value, in order) arranged in this shape.
    pub fn arrange(&self, leaves: &mut impl Iterator<Item = TokenStream>) -> TokenStream {
        match self {
            OutShape::One => leaves.next().expect("a value for each leaf"),
            OutShape::Tuple(parts) => {
                let parts = parts.iter().map(|p| p.arrange(leaves));
                quote::quote!((#(#parts,)*))
            }
        }
    }
}

/// The function a [`Stmt::Call`] calls, which decides where its entry points are.
#[derive(Clone)]
pub enum Callee {
    /// A function named by a path (`f`, `layers::dense`): its entry points are associated
    /// functions of the type of the same name beside it (`layers::dense::fwd`).
    Function {
        /// The path, without generic arguments on its last segment.
        path: syn::Path,
        /// `::<..>` on the last segment.
        turbofish: Option<TokenStream>,
    },
    /// An associated function of a type (`Self::f`, `Model::f`): `Model::f_fwd`.
    Associated {
        ty: syn::Path,
        name: Ident,
        turbofish: Option<TokenStream>,
    },
    /// A method called on the first argument (`model.forward(x)`): `model.forward_fwd(x)`.
    Method {
        name: Ident,
        turbofish: Option<TokenStream>,
    },
}

impl Callee {
    /// The function's name (the last segment of its path, or the method's).
    pub fn name(&self) -> &Ident {
        match self {
            Callee::Function { path, .. } => {
                &path.segments.last().expect("a path has a segment").ident
            }
            Callee::Associated { name, .. } | Callee::Method { name, .. } => name,
        }
    }
}

/// How a branch chooses its arm (arm `i` of `arms`).
pub enum BranchHead {
    /// `if cond { arm 0 } else { arm 1 }`
    If(Code),
    /// `match scrutinee { pattern_i => arm i }` (patterns with their guards)
    Match {
        scrutinee: Code,
        patterns: Vec<Code>,
    },
}

/// How a loop repeats.
pub enum LoopHead {
    /// `for pattern in iter`
    For { pattern: Code, iter: Code },
    /// `loop`
    Loop,
}

/// One element of the function's result.
#[derive(Clone)]
pub enum OutputElem {
    Val(Val),
    /// A constant result (its gradient is zero).
    Const(Const),
}

/// The lowered function.
pub struct Body {
    pub stmts: Vec<Stmt>,
    /// The structure parameters' identifiers, by root number.
    pub roots: Vec<Ident>,
    pub outputs: Vec<OutputElem>,
    /// The aux expression under `has_aux`.
    pub aux: Option<OutputAux>,
    pub values: usize,
    /// The number of slots.
    pub slots: usize,
    /// The lists' identifiers, by number.
    pub lists: Vec<Ident>,
    /// Slots that hold an output until an early `return` or the end: they start empty.
    pub output_slots: Vec<Slot>,
    /// Tainted output constants, for the concretization error.
    pub output_taint: Option<Taint>,
    /// Results of calls bound to `_` (`let (_, gx) = critic_grad(c, x);`): never read, so they
    /// stay as the callee returns them (a structure's gradient, too) and their cotangent is a
    /// zero made from them (`rune_runtime::Discarded`).
    pub discarded: std::collections::BTreeSet<Val>,
    /// Roots that are a call's result read as a structure (`g.w` of `let g =
    /// loss_grad(&model, x);`), and the result: `roots[root]` is its value's identifier, its
    /// leaves are read by path as a parameter's are, and the cotangent they gather is the
    /// one the callee's pullback gets for it.
    pub call_roots: std::collections::BTreeMap<usize, Val>,
}

impl Body {
    /// Whether call result `v` stays as the callee returns it (not made a tensor): bound to `_`,
    /// or read as a structure.
    pub fn kept_whole(&self, v: Val) -> bool {
        self.discarded.contains(&v) || self.call_roots.values().any(|o| *o == v)
    }

    /// The root a call result `v` is read through, if it is read as a structure.
    pub fn call_root_of(&self, v: Val) -> Option<usize> {
        self.call_roots
            .iter()
            .find_map(|(root, o)| (*o == v).then_some(*root))
    }
}

/// The aux value.
pub enum OutputAux {
    Expr(Code),
}

/// Calls `f` on every statement, depth first, in order.
pub fn walk<'a>(stmts: &'a [Stmt], f: &mut impl FnMut(&'a Stmt)) {
    walk_ordered(stmts, false, f);
}

/// Calls `f` on every statement, depth first, in reverse order (a region's statements from last
/// to first, after the statement that holds it): usefulness flows from uses back to
/// definitions, so one such pass settles a straight-line chain.
pub fn walk_rev<'a>(stmts: &'a [Stmt], f: &mut impl FnMut(&'a Stmt)) {
    walk_ordered(stmts, true, f);
}

fn walk_ordered<'a>(stmts: &'a [Stmt], reverse: bool, f: &mut impl FnMut(&'a Stmt)) {
    let mut visit = |s: &'a Stmt| {
        f(s);
        match s {
            Stmt::Branch { arms, .. } => {
                for arm in arms {
                    walk_ordered(arm, reverse, f);
                }
            }
            Stmt::Stages { stages, .. } if reverse => {
                for stage in stages.iter().rev() {
                    walk_ordered(stage, reverse, f);
                }
            }
            Stmt::Stages { stages, .. } => {
                for stage in stages {
                    walk_ordered(stage, reverse, f);
                }
            }
            Stmt::Loop { body, .. } => walk_ordered(body, reverse, f),
            _ => {}
        }
    };
    if reverse {
        stmts.iter().rev().for_each(&mut visit);
    } else {
        stmts.iter().for_each(&mut visit);
    }
}

/// The index constants of a path into a structure parameter.
pub fn path_consts(path: &[PathSeg]) -> impl Iterator<Item = Const> + '_ {
    path.iter().filter_map(|s| match s {
        PathSeg::Index(c) | PathSeg::Key(c) | PathSeg::Part(c) => Some(*c),
        PathSeg::Field(_) | PathSeg::Some => None,
    })
}
