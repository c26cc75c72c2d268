//! Lowering: the function body to the SSA IR of [`crate::ir`].
//!
//! Every user binding is renamed (`__rune_vN` for a differentiated value, `__rune_<name>_N` for
//! a constant), so shadowing and blocks need no scopes in the generated code. An expression that
//! does not touch a differentiated value stays Rust code, evaluated as written.
//!
//! The submodules split the work by job: `stmt` (statements, `let`, assignments), `control`
//! (regions, early exits and stages, loops), `branch` (`if` and `match`), `expr`
//! (expressions), `op` (ops of the op table), `call` (calls of other differentiable functions,
//! and closures), `iter` (lists of tensors and iterator chains), `rename` (constant code with
//! the bindings renamed) and `syntax` (queries on syntax alone). This module holds the
//! lowerer's state, the entry point, and the helpers every job shares.

mod branch;
mod call;
mod control;
mod expr;
mod flat;
mod iter;
mod op;
mod rename;
mod select;
mod stmt;
mod syntax;
mod walk;

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::{Block, Expr, Ident};

use crate::diag::Errors;
use crate::ir::{
    Body, CallArg, Callee, Const, List, Operand, OutputAux, OutputElem, PathSeg, Slot, Stmt, Taint,
    Use, Val,
};
use crate::names::{const_ident, hidden, val_ident};
use crate::parse::{Returns, Signature};

use control::BlockTail;
use syntax::{exits, mentions, split_tail, strip, tensor_lists, Within};

/// What a user name is bound to.
#[derive(Clone)]
enum Binding {
    /// A differentiated value; `true` when the user's variable holds a reference (`&Tensor`
    /// parameter), which decides how it is passed to other differentiable functions.
    Active(Val, bool),
    Const {
        ident: Ident,
        taint: Option<Taint>,
    },
    /// A differentiated variable assigned inside a branch or loop: reads and writes go through
    /// its slot.
    Slot(Slot),
    /// A name bound inside constant code (a `let`, a closure parameter, a pattern) that is
    /// emitted as written: it shadows the function's bindings of the same name there.
    Local,
    /// A closure bound with `let`: calls with differentiated values are inlined (number in
    /// `Lowerer::closures`).
    Closure(usize),
    /// A local `Vec` of differentiated tensors.
    List(List),
    /// An iterator chain over differentiated values bound with `let` (`let layers =
    /// a.iter().chain(&b);`): its uses read the chain as written there (`flat::inline_iter`).
    Iter(Box<flat::IterDef>),
    /// The pullback of `let (y, pb) = g_pullback(..);` (number in `Lowerer::pullbacks`): a
    /// call `pb(&c)` is a call of `g_vjp` with the same arguments.
    Pullback(usize),
}

/// What `pb(&c)` calls for a pullback bound from `g_pullback(args)`: `g_vjp(args, &c)`, with the
/// arguments as they were at `g_pullback` (values, and constants held in locals there).
#[derive(Clone)]
struct PullbackDef {
    vjp: Callee,
    args: Vec<CallArg>,
    taint: Option<Taint>,
}

/// A closure defined in the body: its syntax and the bindings it sees (captured where it is
/// defined, as Rust captures them).
#[derive(Clone)]
struct ClosureDef {
    closure: syn::ExprClosure,
    scopes: Vec<HashMap<String, Binding>>,
    /// The constant it is also emitted as, when it reads no differentiated value (so that it
    /// can be passed around as a value in constant code).
    constant: Option<Ident>,
}

/// The loop being lowered: its flags for `break` and `continue`.
struct LoopCtx {
    brk: Ident,
    cont: Ident,
    /// The inner loop of a flattened `for` loop (`flat`): a `break` leaves the outer one too.
    joined: bool,
}

/// Early `return`: the flag it sets and the slots that hold the outputs.
struct RetCtx {
    flag: Ident,
    slots: Vec<Slot>,
}

/// A lowered expression.
#[derive(Clone)]
enum Lowered {
    Val(Val),
    Const {
        tokens: TokenStream,
        /// Set when the value was read out of a differentiated tensor.
        taint: Option<Taint>,
        /// The expression is syntactically a reference (`&x`).
        is_ref: bool,
    },
}

impl Lowered {
    fn constant(tokens: TokenStream) -> Self {
        Lowered::Const {
            tokens,
            taint: None,
            is_ref: false,
        }
    }
}

/// What a map of parameters supports in a #[differentiable] body.
const MAP_USES: &str = "a map of parameters supports reading a part by key (`params[\"w\"]`, \
    `&params[&name]`, `params.get(key).unwrap()` or `.expect(..)`), `len`, `keys` and \
    `contains_key`, `for` loops over it (`for (name, p) in params`, `params.iter()`, \
    `params.values()`), and passing it whole to another #[differentiable] function";

struct Lowerer<'e> {
    errors: &'e mut Errors,
    stmts: Vec<Stmt>,
    scopes: Vec<HashMap<String, Binding>>,
    /// The index in `scopes` of the first scope of the branch arm or loop body being lowered: a
    /// binding in an earlier scope outlives the region, so assigning it there needs a slot.
    region_floor: usize,
    values: usize,
    consts: usize,
    renames: usize,
    slots: usize,
    optional_slots: Vec<Slot>,
    regions: usize,
    loops: Vec<LoopCtx>,
    ret: Option<RetCtx>,
    outputs: usize,
    /// Values that are (parts of) structure parameters: their root and path.
    paths: HashMap<Val, (usize, Vec<PathSeg>)>,
    /// The identifiers of the structure parameters, by root number.
    roots: Vec<Ident>,
    /// The roots that are maps (`BTreeMap`, `HashMap`): indexing one reads a part by key.
    map_roots: Vec<usize>,
    closures: Vec<ClosureDef>,
    pullbacks: Vec<PullbackDef>,
    /// The lists' identifiers, by number.
    lists: Vec<Ident>,
    /// Names of local `Vec`s that may receive differentiated tensors (found before lowering).
    tensor_lists: Vec<String>,
    /// The lists that are array parameters (`[f64; N]`), read-only, and the parameters' names
    /// (what constant code reads: the user's array, whatever the list holds).
    arrays: Vec<(List, Ident)>,
    /// How many names `bind` has bound, and the count when each name was last bound: an
    /// iterator bound with `let` is read where it is walked only while the names it reads
    /// still mean what they meant ([`flat::IterDef`]).
    binds: usize,
    generations: HashMap<String, usize>,
    /// The values of calls of differentiable functions taken as one value, and the callee's
    /// name: indexing one is a function returning an array read without a pattern.
    call_values: Vec<(Val, String)>,
    /// Results of calls bound to `_` ([`Body::discarded`]).
    call_outs: std::collections::BTreeSet<Val>,
    discarded: std::collections::BTreeSet<Val>,
    /// [`Body::call_roots`].
    call_roots: std::collections::BTreeMap<usize, Val>,
    /// Local lists made as arrays of a number (`[0.0; n]`), which constant code reads as
    /// numbers (`rune_runtime::list_numbers`).
    number_lists: Vec<List>,
    /// Windows of a structure parameter's `Vec` (`windows`, `chunks`): lists whose element `i`
    /// is the structure's element at the path, `i` past the window's first.
    windows: Vec<(List, usize, Vec<PathSeg>, Const)>,
    /// Constants that name items, hoisted to the start of the body (`names_item`).
    items: Vec<Stmt>,
    /// The function returns a number.
    scalar_out: bool,
    /// The function returns a `Result` (its body may use `?`).
    fallible: bool,
}

/// Lowers `block` (the body of a function with signature `sig`).
pub fn lower(sig: &Signature, block: &Block, errors: &mut Errors) -> Body {
    let mut l = Lowerer {
        errors,
        stmts: Vec::new(),
        scopes: vec![HashMap::new()],
        region_floor: 0,
        values: 0,
        consts: 0,
        renames: 0,
        slots: 0,
        optional_slots: Vec::new(),
        regions: 0,
        loops: Vec::new(),
        ret: None,
        outputs: sig.outputs(),
        paths: HashMap::new(),
        roots: Vec::new(),
        map_roots: Vec::new(),
        closures: Vec::new(),
        pullbacks: Vec::new(),
        lists: Vec::new(),
        tensor_lists: tensor_lists(sig, block),
        arrays: Vec::new(),
        windows: Vec::new(),
        number_lists: Vec::new(),
        call_values: Vec::new(),
        call_outs: Default::default(),
        discarded: Default::default(),
        call_roots: Default::default(),
        binds: 0,
        generations: HashMap::new(),
        items: Vec::new(),
        scalar_out: sig.scalar_out,
        fallible: sig.fallible.is_some(),
    };
    for p in &sig.params {
        let binding = match &p.active {
            Some(a) if a.structure => {
                let root = l.roots.len();
                l.roots.push(p.ident.clone());
                if crate::parse::is_map_type(&p.ty) {
                    l.map_roots.push(root);
                }
                let borrowed = a.passing == crate::parse::Passing::Borrowed;
                l.stmts.push(Stmt::StructParam {
                    root,
                    ident: p.ident.clone(),
                    borrowed,
                });
                let out = l.leaf(root, Vec::new());
                Binding::Active(out, borrowed)
            }
            Some(a) if a.array => {
                let list = List(l.lists.len());
                let ident = l.fresh_const_ident(&p.ident.to_string());
                l.lists.push(ident);
                l.arrays.push((list, p.ident.clone()));
                l.stmts.push(Stmt::ArrayParam {
                    list,
                    ident: p.ident.clone(),
                    borrowed: a.passing == crate::parse::Passing::Borrowed,
                });
                Binding::List(list)
            }
            Some(a) => {
                let out = l.new_val();
                l.stmts.push(Stmt::Param {
                    out,
                    ident: p.ident.clone(),
                    borrowed: a.passing == crate::parse::Passing::Borrowed,
                    scalar: a.scalar,
                });
                Binding::Active(out, a.passing == crate::parse::Passing::Borrowed)
            }
            None => Binding::Const {
                ident: p.ident.clone(),
                taint: None,
            },
        };
        l.bind(&p.ident.to_string(), binding);
    }

    let n_out = sig.outputs();
    let (init, tail) = split_tail(&block.stmts);
    // A body that ends in a `loop` leaves it by `return`: the loop is a statement.
    let (init, tail) = match tail {
        Some(t) if matches!(strip(t), Expr::Loop(_)) => (&block.stmts[..], None),
        other => (init, other),
    };
    let early_return = init.iter().any(|s| exits(s, Within::Function));
    if early_return {
        if matches!(sig.returns, Returns::Aux { .. }) {
            l.errors.at(
                block,
                "#[differentiable(has_aux)] functions support `return` only as their last statement",
            );
        }
        let flag = hidden("returned");
        l.stmts
            .push(Stmt::Verbatim(quote!(let mut #flag = false;).into()));
        let slots = (0..n_out).map(|_| l.new_optional_slot()).collect();
        l.ret = Some(RetCtx { flag, slots });
    }
    l.block_stmts(init, tail.filter(|_| early_return).map(BlockTail::Return));
    let tail = if early_return { None } else { tail };
    let mut outputs = Vec::new();
    let mut aux = None;
    let mut output_taint = None;
    match tail {
        None if early_return => {
            let slots = l.ret.as_ref().map(|r| r.slots.clone()).unwrap_or_default();
            for slot in slots {
                let out = l.new_val();
                l.stmts.push(Stmt::SlotRead { out, slot });
                outputs.push(OutputElem::Val(out));
            }
        }
        None => l.errors.at(
            block
                .stmts
                .last()
                .map_or(block.to_token_stream(), |s| s.to_token_stream()),
            "a #[differentiable] function must end with the expression it returns",
        ),
        Some(tail) => {
            let lowered = match &sig.returns {
                Returns::Aux { .. } => match strip(tail) {
                    Expr::Tuple(t) if t.elems.len() == 2 => {
                        let value = l.expr(&t.elems[0]);
                        aux = Some(OutputAux::Expr(l.aux(&t.elems[1]).into()));
                        vec![value]
                    }
                    other => {
                        l.errors.at(
                            other,
                            "with has_aux, end the function with a tuple expression `(value, aux)`",
                        );
                        vec![]
                    }
                },
                Returns::Single(_) => vec![l.output_expr(tail)],
                Returns::Tuple(_) => {
                    let tail = l.ok_value(tail);
                    l.expr_multi(tail, n_out)
                }
            };
            for item in lowered {
                match item {
                    Lowered::Val(v) => outputs.push(OutputElem::Val(v)),
                    Lowered::Const { tokens, taint, .. } => {
                        output_taint = output_taint.or(taint);
                        let id = l.hoist(tokens, None, Use::Plain);
                        outputs.push(OutputElem::Const(id));
                    }
                }
            }
        }
    }
    let mut stmts = std::mem::take(&mut l.items);
    stmts.append(&mut l.stmts);
    merge_repeated_reads(&mut stmts, &mut outputs, aux.as_ref());
    Body {
        stmts,
        roots: l.roots,
        outputs,
        aux,
        values: l.values,
        slots: l.slots,
        lists: l.lists,
        output_slots: l.optional_slots,
        output_taint,
        discarded: l.discarded,
        call_roots: l.call_roots,
    }
}

impl Lowerer<'_> {
    /// A leaf (or sub-structure) of structure parameter `root` at `path`.
    fn leaf(&mut self, root: usize, path: Vec<PathSeg>) -> Val {
        self.leaf_at(root, path, Span::call_site())
    }

    /// A leaf read by the user's expression at `span`.
    fn leaf_at(&mut self, root: usize, path: Vec<PathSeg>, span: Span) -> Val {
        let out = self.new_val();
        self.stmts.push(Stmt::Leaf {
            out,
            root,
            path: path.clone(),
            span,
        });
        self.paths.insert(out, (root, path));
        out
    }

    /// `base.member` or `base[index]` when `base` is part of a structure parameter.
    fn extend_path(
        &mut self,
        span: Span,
        base: &Lowered,
        seg: impl FnOnce(&mut Self) -> PathSeg,
    ) -> Option<Lowered> {
        let Lowered::Val(v) = base else { return None };
        let (root, mut path) = self.paths.get(v).cloned()?;
        path.push(seg(self));
        Some(Lowered::Val(self.leaf_at(root, path, span)))
    }

    /// A call's result whose part is read (`g.w` of `let g = loss_grad(&model, x);`): a
    /// structure from here on, a root of its own ([`Body::call_roots`]).
    pub(super) fn call_root(&mut self, v: Val) -> Option<(usize, Vec<PathSeg>)> {
        if !self.call_outs.contains(&v) || self.discarded.contains(&v) {
            return None;
        }
        let root = self.roots.len();
        self.roots.push(crate::names::val_ident(v));
        self.call_roots.insert(root, v);
        self.paths.insert(v, (root, Vec::new()));
        Some((root, Vec::new()))
    }

    /// Whether `v` is a map parameter as a whole.
    fn is_map_root(&self, v: Val) -> bool {
        self.paths
            .get(&v)
            .is_some_and(|(root, path)| path.is_empty() && self.map_roots.contains(root))
    }

    /// `base[index]` when `base` is part of a structure parameter: a map's part by key when
    /// `base` is a map parameter or `index` a reference or a string literal (which no `Vec` or
    /// array takes), an element by position for an integer literal, and otherwise
    /// (`model.layers[name]`) whichever the field's type takes.
    fn part_at(&mut self, span: Span, base: &Lowered, index: &Expr) -> Option<Lowered> {
        let position = matches!(
            strip(index),
            Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(_),
                ..
            })
        );
        let keyed = matches!(base, Lowered::Val(v) if self.is_map_root(*v))
            || matches!(
                strip(index),
                Expr::Reference(_)
                    | Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(_),
                        ..
                    })
            );
        self.extend_path(span, base, |l| {
            let tokens = match l.expr(index) {
                Lowered::Const { tokens, .. } => tokens,
                Lowered::Val(_) => {
                    l.errors.at(index, "an index must be a constant");
                    quote!(0)
                }
            };
            if keyed {
                PathSeg::Key(l.hoist(tokens, None, Use::Plain))
            } else if position {
                PathSeg::Index(l.hoist(tokens, Some(quote!(usize)), Use::Plain))
            } else {
                PathSeg::Part(l.hoist(tokens, None, Use::Plain))
            }
        })
    }

    fn new_val(&mut self) -> Val {
        self.values += 1;
        Val(self.values - 1)
    }

    fn new_slot(&mut self) -> Slot {
        self.slots += 1;
        Slot(self.slots - 1)
    }

    fn new_optional_slot(&mut self) -> Slot {
        let s = self.new_slot();
        self.optional_slots.push(s);
        s
    }

    fn new_region(&mut self) -> usize {
        self.regions += 1;
        self.regions - 1
    }

    fn bind(&mut self, name: &str, b: Binding) {
        self.binds += 1;
        self.generations.insert(name.to_owned(), self.binds);
        self.scopes
            .last_mut()
            .expect("a scope is open")
            .insert(name.to_owned(), b);
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    /// Replaces the binding of `name` where it is defined.
    fn rebind(&mut self, name: &str, b: Binding) {
        if let Some(scope) = self.scopes.iter_mut().rev().find(|s| s.contains_key(name)) {
            scope.insert(name.to_owned(), b);
        }
    }

    fn fresh_const_ident(&mut self, name: &str) -> Ident {
        self.renames += 1;
        // A raw identifier (`r#type`) keeps its name without the prefix inside ours.
        let name = name.trim_start_matches("r#");
        hidden(&format!("{name}_{}", self.renames))
    }

    fn hoist(&mut self, expr: TokenStream, ty: Option<TokenStream>, usage: Use) -> Const {
        let id = Const(self.consts);
        self.consts += 1;
        let item = self.names_item(&expr);
        let hoist = Stmt::Hoist {
            id,
            expr: expr.into(),
            ty: ty.map(crate::ir::Code::from),
            usage,
        };
        if item {
            self.items.push(hoist);
        } else {
            self.stmts.push(hoist);
        }
        id
    }

    /// Whether `expr` is the name of an item (`DT`, a `const` or a const generic parameter): one
    /// capitalised identifier that nothing in the function binds. Its value is the same
    /// wherever it is read, so it is hoisted to the start of the body, and the backward pass
    /// keeps one copy instead of one a loop iteration.
    fn names_item(&self, expr: &TokenStream) -> bool {
        let mut tokens = expr.clone().into_iter();
        match (tokens.next(), tokens.next()) {
            (Some(proc_macro2::TokenTree::Ident(i)), None) => {
                let name = i.to_string();
                name.starts_with(char::is_uppercase) && self.lookup(&name).is_none()
            }
            _ => false,
        }
    }

    /// A lowered operand as an op input (constants hoisted).
    fn operand(&mut self, l: Lowered, usage: Use) -> Operand {
        match l {
            Lowered::Val(v) => Operand::Val(v),
            Lowered::Const { tokens, is_ref, .. } => {
                let usage = if is_ref { Use::Plain } else { usage };
                Operand::Const(self.hoist(tokens, None, usage))
            }
        }
    }

    fn taint_of(ls: &[&Lowered]) -> Option<Taint> {
        ls.iter().find_map(|l| match l {
            Lowered::Const { taint, .. } => *taint,
            Lowered::Val(_) => None,
        })
    }

    /// Tokens of a lowered expression used inside constant code.
    fn const_tokens(&self, l: &Lowered) -> TokenStream {
        match l {
            Lowered::Val(v) => val_ident(*v).into_token_stream(),
            Lowered::Const { tokens, .. } => tokens.clone(),
        }
    }

    /// Whether `e` reads a differentiated value (shape metadata does not count).
    fn mentions_active(&self, e: &Expr) -> bool {
        // A lookup a name, not a list of every active name a call: bodies are long.
        mentions(
            e,
            &|name| {
                self.scopes
                    .iter()
                    .any(|s| s.get(name).is_some_and(|b| self.is_active(b)))
            },
            self.scalar_out,
        )
    }

    /// The parameter list `list` is, if it is an array parameter's.
    fn array_param(&self, list: List) -> Option<&Ident> {
        self.arrays.iter().find(|(l, _)| *l == list).map(|(_, p)| p)
    }

    /// Whether a binding holds a differentiated value (or a list, slot or closure of them).
    fn is_active(&self, b: &Binding) -> bool {
        match b {
            Binding::Active(..)
            | Binding::Slot(_)
            | Binding::List(_)
            | Binding::Iter(_)
            | Binding::Pullback(_) => true,
            Binding::Closure(index) => self.closures[*index].constant.is_none(),
            Binding::Const { .. } | Binding::Local => false,
        }
    }

    /// The names bound to differentiated values.
    fn active_names(&self) -> Vec<String> {
        self.scopes
            .iter()
            .flat_map(|s| s.iter())
            .filter(|(_, b)| self.is_active(b))
            .map(|(n, _)| n.clone())
            .collect()
    }
}

/// `root.path` with the forward pass's index constants.
pub fn path_tokens(root: &Ident, path: &[PathSeg]) -> TokenStream {
    path_place(root.to_token_stream(), path, const_ident, false)
}

/// The place `base.field[index]..` names, each index read from the local `index_local` names;
/// through an `Option` (`Some`) by `as_ref` (`as_mut` when `mutable`). A path ending inside an
/// `Option` is dereferenced, so that the place is the value itself, as for a field. A map's part
/// is read by indexing with the key (a reference), and found mutably by the owned key the
/// backward pass kept.
pub fn path_place(
    base: TokenStream,
    path: &[PathSeg],
    index_local: fn(Const) -> Ident,
    mutable: bool,
) -> TokenStream {
    let mut place = base;
    for (i, seg) in path.iter().enumerate() {
        place = match seg {
            PathSeg::Field(m) => quote!(#place.#m),
            PathSeg::Index(c) => {
                let c = index_local(*c);
                quote!(#place[#c])
            }
            PathSeg::Key(c) if mutable => {
                let c = index_local(*c);
                quote!((*::rune_ad::__private::map_part_mut(&mut #place, &#c)))
            }
            PathSeg::Key(c) => {
                let c = index_local(*c);
                quote!(#place[#c])
            }
            PathSeg::Part(c) if mutable => {
                let c = index_local(*c);
                quote!((*::rune_ad::__private::part_at_mut(&mut #place, &#c)))
            }
            PathSeg::Part(c) => {
                let c = index_local(*c);
                quote!((*::rune_ad::__private::part_at(&#place, &#c)))
            }
            PathSeg::Some if mutable => {
                quote!(#place.as_mut().expect("rune-ad: the arm taken for `Some`"))
            }
            PathSeg::Some => quote!(#place.as_ref().expect("rune-ad: the arm taken for `Some`")),
        };
        if matches!(seg, PathSeg::Some) && i + 1 == path.len() {
            place = quote!((*#place));
        }
    }
    place
}

/// Reads of a variable that repeat an earlier read of it in the same statement list, with no
/// write of it between, are the earlier read: every op, call or write that reads a repeated
/// read's value is given the first read's. (`x` read by four ops of a step is one value: a
/// region reading it has one input and one partial, not four, and the backward pass keeps it
/// once.) A repeated read stays only where constant code names it (`x.shape()`), which the
/// derivatives do not see. A branch, loop or call between two reads ends the run, and nothing
/// under `Stages` is merged (a later stage reads what an earlier one saved by its own name).
fn merge_repeated_reads(
    stmts: &mut Vec<Stmt>,
    outputs: &mut [OutputElem],
    aux: Option<&OutputAux>,
) {
    fn scan(stmts: &mut [Stmt], merge: bool, first: &mut HashMap<Val, Val>) {
        let mut last: HashMap<Slot, Val> = HashMap::new();
        for s in stmts {
            match s {
                Stmt::SlotRead { out, slot } if merge => match last.get(slot) {
                    Some(a) => {
                        first.insert(*out, *a);
                    }
                    None => {
                        last.insert(*slot, *out);
                    }
                },
                Stmt::SlotWrite { slot, .. } | Stmt::SlotInit { slot, .. } => {
                    last.remove(slot);
                }
                Stmt::Branch { arms, .. } => {
                    last.clear();
                    arms.iter_mut().for_each(|a| scan(a, merge, first));
                }
                Stmt::Loop { body, .. } => {
                    last.clear();
                    scan(body, merge, first);
                }
                Stmt::Stages { stages, .. } => {
                    last.clear();
                    stages.iter_mut().for_each(|s| scan(s, false, first));
                }
                Stmt::Call { .. } => last.clear(),
                _ => {}
            }
        }
    }
    fn rename(stmts: &mut [Stmt], first: &HashMap<Val, Val>) {
        let operand = |o: &mut Operand| {
            if let Operand::Val(v) = o {
                if let Some(a) = first.get(v) {
                    *v = *a;
                }
            }
        };
        for s in stmts {
            match s {
                Stmt::Op { inputs, .. } | Stmt::Fused { inputs, .. } => {
                    inputs.iter_mut().for_each(operand)
                }
                Stmt::SlotInit { init: o, .. }
                | Stmt::SlotWrite { val: o, .. }
                | Stmt::ListPush { val: o, .. } => operand(o),
                Stmt::Call { args, .. } => {
                    for a in args {
                        if let CallArg::Val { val, .. } = a {
                            if let Some(f) = first.get(val) {
                                *val = *f;
                            }
                        }
                    }
                }
                Stmt::Branch { arms, .. } => arms.iter_mut().for_each(|a| rename(a, first)),
                Stmt::Stages { stages, .. } => stages.iter_mut().for_each(|s| rename(s, first)),
                Stmt::Loop { body, .. } => rename(body, first),
                _ => {}
            }
        }
    }
    let mut first = HashMap::new();
    scan(stmts, true, &mut first);
    if first.is_empty() {
        return;
    }
    rename(stmts, &first);
    for o in outputs.iter_mut() {
        if let OutputElem::Val(v) = o {
            if let Some(a) = first.get(v) {
                *v = *a;
            }
        }
    }
    // The repeated reads that constant code does not name go.
    let mut named = std::collections::HashSet::new();
    crate::ir::walk(stmts, &mut |s| {
        s.for_each_code(&mut |c| named.extend(c.vals().iter().copied()))
    });
    if let Some(OutputAux::Expr(c)) = aux {
        named.extend(c.vals().iter().copied());
    }
    let unnamed: std::collections::HashSet<Val> = first
        .keys()
        .copied()
        .filter(|v| !named.contains(v))
        .collect();
    drop_reads(stmts, &unnamed);
}

/// Removes the reads of `vals` from a statement list and the lists it holds.
fn drop_reads(stmts: &mut Vec<Stmt>, vals: &std::collections::HashSet<Val>) {
    stmts.retain(|s| !matches!(s, Stmt::SlotRead { out, .. } if vals.contains(out)));
    for s in stmts {
        match s {
            Stmt::Branch { arms, .. } => arms.iter_mut().for_each(|a| drop_reads(a, vals)),
            Stmt::Stages { stages, .. } => stages.iter_mut().for_each(|s| drop_reads(s, vals)),
            Stmt::Loop { body, .. } => drop_reads(body, vals),
            _ => {}
        }
    }
}
