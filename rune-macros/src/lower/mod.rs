//! Lowering: the function body to the SSA IR of [`crate::ir`].
//!
//! Every user binding is renamed (`__rune_vN` for a differentiated value, `__rune_<name>_N` for
//! a constant), so shadowing and blocks need no scopes in the generated code. An expression that
//! does not touch a differentiated value stays Rust code, evaluated as written.

mod branch;
mod call;
mod control;
mod expr;
mod iter;
mod op;
mod rename;
mod syntax;

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::{BinOp, Block, Expr, Ident, Local, Pat, Stmt as SynStmt};

use crate::diag::Errors;
use crate::ir::{
    Body, Const, List, Operand, OutputAux, OutputElem, PathSeg, Slot, Stmt, Taint, Use, Val,
};
use crate::names::{const_ident, hidden, val_ident};
use crate::ops::{self, Form};
use crate::parse::{Returns, Signature};

use control::BlockTail;
use iter::Item;
use syntax::{exits, mentions, new_vec, paren, split_tail, strip, tensor_lists};

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
    closures: Vec<ClosureDef>,
    /// The lists' identifiers, by number.
    lists: Vec<Ident>,
    /// Names of local `Vec`s that may receive differentiated tensors (found before lowering).
    tensor_lists: Vec<String>,
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
        closures: Vec::new(),
        lists: Vec::new(),
        tensor_lists: tensor_lists(sig, block),
        scalar_out: sig.scalar_out,
        fallible: sig.fallible.is_some(),
    };
    for p in &sig.params {
        let binding = match &p.active {
            Some(a) if a.structure => {
                let root = l.roots.len();
                l.roots.push(p.ident.clone());
                let borrowed = a.passing == crate::parse::Passing::Borrowed;
                l.stmts.push(Stmt::StructParam {
                    root,
                    ident: p.ident.clone(),
                    borrowed,
                });
                let out = l.leaf(root, Vec::new());
                Binding::Active(out, borrowed)
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
    let early_return = init.iter().any(|s| exits(s, false, true));
    if early_return {
        if matches!(sig.returns, Returns::Aux { .. }) {
            l.errors.at(
                block,
                "#[differentiable(has_aux)] functions support `return` only as their last statement",
            );
        }
        let flag = hidden("returned");
        l.stmts.push(Stmt::Verbatim(quote!(let mut #flag = false;)));
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
                        aux = Some(OutputAux::Expr(l.aux(&t.elems[1])));
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
    Body {
        stmts: l.stmts,
        roots: l.roots,
        outputs,
        aux,
        values: l.values,
        slots: l.slots,
        lists: l.lists,
        output_slots: l.optional_slots,
        output_taint,
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

    fn new_val(&mut self) -> Val {
        self.values += 1;
        Val(self.values - 1)
    }

    fn bind(&mut self, name: &str, b: Binding) {
        self.scopes
            .last_mut()
            .expect("a scope is open")
            .insert(name.to_owned(), b);
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
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
        self.stmts.push(Stmt::Hoist {
            id,
            expr,
            ty,
            usage,
        });
        id
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

    // ---- statements ------------------------------------------------------------------------

    fn stmt(&mut self, stmt: &SynStmt) {
        match stmt {
            SynStmt::Local(local) => self.local(local),
            SynStmt::Item(item) => self.stmts.push(Stmt::Verbatim(item.to_token_stream())),
            SynStmt::Macro(m) => {
                let tokens = self.rewrite_macro_tokens(m.mac.tokens.clone(), &m.mac);
                let path = &m.mac.path;
                let bang = &m.mac.bang_token;
                let tokens = match &m.mac.delimiter {
                    syn::MacroDelimiter::Paren(_) => quote!(#path #bang (#tokens);),
                    syn::MacroDelimiter::Brace(_) => quote!(#path #bang {#tokens}),
                    syn::MacroDelimiter::Bracket(_) => quote!(#path #bang [#tokens];),
                };
                self.stmts.push(Stmt::Verbatim(tokens));
            }
            SynStmt::Expr(e, semi) => {
                if let Some(()) = self.control(e) {
                    return;
                }
                if let Some(()) = self.assignment(e) {
                    return;
                }
                match self.expr(e) {
                    Lowered::Const { tokens, .. } => {
                        let semi = semi.map(|s| s.to_token_stream());
                        self.stmts.push(Stmt::Verbatim(quote!(#tokens #semi)));
                    }
                    Lowered::Val(_) => {}
                }
            }
        }
    }

    fn local(&mut self, local: &Local) {
        let Some(init) = &local.init else {
            self.errors.at(
                local,
                "a `let` in a #[differentiable] function needs a value (`let x = ...;`)",
            );
            return;
        };
        if let Some((_, diverge)) = &init.diverge {
            self.errors.at(
                diverge,
                "`let ... else` is not supported in #[differentiable] functions",
            );
            return;
        }
        let (pat, ty) = match &local.pat {
            Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            other => (other, None),
        };
        match pat {
            Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                if let Expr::Closure(c) = strip(&init.expr) {
                    self.define_closure(&pi.ident, c, ty);
                    return;
                }
                if let Some(list) = self.collected_list(&init.expr, &pi.ident.to_string()) {
                    self.bind(&pi.ident.to_string(), Binding::List(list));
                    return;
                }
                if self.tensor_lists.contains(&pi.ident.to_string()) {
                    if let Some(elems) = new_vec(&init.expr) {
                        self.define_list(&pi.ident, &init.expr, elems);
                        return;
                    }
                }
                let l = self.expr(&init.expr);
                self.bind_lowered(&pi.ident, pi.mutability.is_some(), ty, l, Some(&init.expr));
            }
            Pat::Wild(_) => {
                if let Expr::Tuple(t) = strip(&init.expr) {
                    // `let _ = (a, b);` evaluates and drops each.
                    for e in &t.elems {
                        if let Lowered::Const { tokens, .. } = self.expr(e) {
                            self.stmts.push(Stmt::Verbatim(quote!(let _ = #tokens;)));
                        }
                    }
                } else if let Lowered::Const { tokens, .. } = self.expr(&init.expr) {
                    self.stmts.push(Stmt::Verbatim(quote!(let _ = #tokens;)));
                }
            }
            Pat::Tuple(t) if t.elems.is_empty() && self.mentions_active(&init.expr) => {
                self.errors.at(
                    t,
                    "bind the value here to a name: `()` cannot hold a differentiated tensor",
                );
            }
            Pat::Tuple(_) => {
                let item = self.expr_item(&init.expr, pat);
                self.bind_item(pat, item);
            }
            other => self.errors.at(
                other,
                "#[differentiable] functions support `let` with a name, `_`, or a tuple of names",
            ),
        }
    }

    /// `e` as an [`Item`] shaped like the tuple pattern `pat` binds: tuple expressions element
    /// by element, calls returning tuples and constant tuples split.
    fn expr_item(&mut self, e: &Expr, pat: &Pat) -> Item {
        let pat = match pat {
            Pat::Type(pt) => &*pt.pat,
            Pat::Paren(p) => &*p.pat,
            other => other,
        };
        match (strip(e), pat) {
            (Expr::Tuple(t), Pat::Tuple(p)) if t.elems.len() == p.elems.len() => Item::Tuple(
                t.elems
                    .iter()
                    .zip(&p.elems)
                    .map(|(e, p)| self.expr_item(e, p))
                    .collect(),
            ),
            (e, Pat::Tuple(p)) => {
                let n = p.elems.len();
                let items = self.expr_multi(e, n);
                if items.len() != n {
                    return Item::Tuple(Vec::new());
                }
                Item::Tuple(items.into_iter().map(|l| Item::Value(l, false)).collect())
            }
            (e, _) => {
                let by_ref = self.ref_binding(Some(e));
                Item::Value(self.expr(e), by_ref)
            }
        }
    }

    /// Binds a pattern (names, tuples, `&name`, `_`) to a chain's element.
    fn bind_item(&mut self, pat: &Pat, item: Item) {
        match (pat, item) {
            (Pat::Type(pt), item) => self.bind_item(&pt.pat, item),
            (Pat::Paren(p), item) => self.bind_item(&p.pat, item),
            (Pat::Wild(_), _) => {}
            (Pat::Ident(pi), Item::Value(Lowered::Val(v), true))
                if pi.by_ref.is_none() && pi.subpat.is_none() && pi.mutability.is_none() =>
            {
                self.bind(&pi.ident.to_string(), Binding::Active(v, true));
            }
            (Pat::Ident(pi), Item::Value(l, _)) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                self.bind_lowered(&pi.ident, pi.mutability.is_some(), None, l, None);
            }
            (Pat::Tuple(t), Item::Tuple(items)) if t.elems.len() == items.len() => {
                for (p, item) in t.elems.iter().zip(items) {
                    self.bind_item(p, item);
                }
            }
            (Pat::Reference(r), Item::Value(Lowered::Const { tokens, taint, .. }, _)) => {
                let deref = Lowered::Const {
                    tokens: quote!(*(#tokens)),
                    taint,
                    is_ref: false,
                };
                self.bind_item(&r.pat, Item::Value(deref, false));
            }
            (Pat::Reference(r), item) => self.bind_item(&r.pat, item),
            (other, _) => self.errors.at(
                other,
                "this pattern does not match the elements here: bind names, tuples of them \
                 (`(i, x)` for `enumerate`, `(a, b)` for `zip`), `&name` or `_`",
            ),
        }
    }

    /// Whether `e` names a binding that holds a reference to a differentiated tensor.
    fn ref_binding(&self, e: Option<&Expr>) -> bool {
        match e.map(strip) {
            Some(Expr::Reference(_)) => true,
            Some(Expr::Path(p)) => p.path.get_ident().is_some_and(|i| {
                matches!(self.lookup(&i.to_string()), Some(Binding::Active(_, true)))
            }),
            _ => false,
        }
    }

    fn bind_lowered(
        &mut self,
        ident: &Ident,
        mutable: bool,
        ty: Option<&syn::Type>,
        l: Lowered,
        init: Option<&Expr>,
    ) {
        match l {
            Lowered::Val(v) => {
                let is_ref = self.ref_binding(init);
                self.bind(&ident.to_string(), Binding::Active(v, is_ref))
            }
            Lowered::Const { tokens, taint, .. } => {
                let new = self.fresh_const_ident(&ident.to_string());
                let mutability = mutable.then(|| quote!(mut));
                let ty = ty.map(|t| quote!(: #t));
                self.stmts
                    .push(Stmt::Verbatim(quote!(let #mutability #new #ty = #tokens;)));
                self.bind(&ident.to_string(), Binding::Const { ident: new, taint });
            }
        }
    }

    /// `x = e` and `x op= e`; `None` when `e` is not an assignment.
    fn assignment(&mut self, e: &Expr) -> Option<()> {
        let (target, value, op) = match e {
            Expr::Assign(a) => (&*a.left, &*a.right, None),
            Expr::Binary(b) => {
                let op = match b.op {
                    BinOp::AddAssign(_) => "add",
                    BinOp::SubAssign(_) => "sub",
                    BinOp::MulAssign(_) => "mul",
                    BinOp::DivAssign(_) => "div",
                    BinOp::RemAssign(_)
                    | BinOp::BitXorAssign(_)
                    | BinOp::BitAndAssign(_)
                    | BinOp::BitOrAssign(_)
                    | BinOp::ShlAssign(_)
                    | BinOp::ShrAssign(_) => "other",
                    _ => return None,
                };
                (&*b.left, &*b.right, Some((op, e.span())))
            }
            _ => return None,
        };
        let name = match strip(target) {
            Expr::Path(p) if p.path.get_ident().is_some() => p.path.get_ident().cloned(),
            _ => None,
        };
        let Some(name) = name else {
            if self.mentions_active(target) {
                self.errors.at(
                    target,
                    "a #[differentiable] function cannot assign to a field or element of a \
                     differentiated value; bind the new tensor to a variable instead",
                );
                return Some(());
            }
            if self.mentions_active(value) {
                self.errors.at(
                    value,
                    "a differentiated value cannot be stored into a field or element of a \
                     constant (its gradient would be lost); bind it to a variable instead",
                );
                return Some(());
            }
            // Assignment to a field or an element of a constant: constant code as written.
            self.verbatim_expr(e);
            return Some(());
        };
        let current = match self.lookup(&name.to_string()) {
            Some(b) => b.clone(),
            None => {
                self.errors
                    .at(&name, format!("cannot find `{name}` in this function"));
                return Some(());
            }
        };
        if let Binding::List(_) = current {
            self.errors.at(
                target,
                "a `Vec` of differentiated tensors cannot be reassigned; declare a new one with \
                 `let` (inside the loop, for one per iteration)",
            );
            return Some(());
        }
        if let Binding::Closure(_) = current {
            self.errors.at(
                target,
                "a variable holding a closure cannot be reassigned in a #[differentiable] \
                 function; bind the new closure to a new name",
            );
            return Some(());
        }
        // A plain variable given a value that reads no differentiated one: constant code.
        if matches!(current, Binding::Const { .. }) && !self.mentions_active(value) {
            self.verbatim_expr(e);
            return Some(());
        }
        let rhs = self.expr(value);
        let new = match op {
            None => rhs,
            Some((op, span)) => {
                let lhs = match &current {
                    Binding::Active(v, _) => Lowered::Val(*v),
                    Binding::Slot(slot) => {
                        let out = self.new_val();
                        self.stmts.push(Stmt::SlotRead { out, slot: *slot });
                        Lowered::Val(out)
                    }
                    Binding::Const { ident, taint } => Lowered::Const {
                        tokens: ident.to_token_stream(),
                        taint: *taint,
                        is_ref: false,
                    },
                    Binding::Local | Binding::Closure(_) | Binding::List(_) => {
                        unreachable!("locals exist only while renaming; closures are refused above")
                    }
                };
                if matches!((&lhs, &rhs), (Lowered::Const { .. }, Lowered::Const { .. })) {
                    let taint = Self::taint_of(&[&lhs, &rhs]);
                    let rhs_tokens = paren(self.const_tokens(&rhs));
                    let lhs_tokens = self.const_tokens(&lhs);
                    let op_tokens = match e {
                        Expr::Binary(b) => b.op.to_token_stream(),
                        _ => unreachable!("compound assignment is binary"),
                    };
                    self.stmts
                        .push(Stmt::Verbatim(quote!(#lhs_tokens #op_tokens #rhs_tokens;)));
                    if let (Some(t), Binding::Const { ident, .. }) = (taint, current) {
                        self.rebind(
                            &name.to_string(),
                            Binding::Const {
                                ident,
                                taint: Some(t),
                            },
                        );
                    }
                    return Some(());
                }
                if op == "other" {
                    self.errors.at(
                        e,
                        "this operator cannot take a differentiated tensor; supported: \
                         `+= -= *= /=`",
                    );
                    return Some(());
                }
                let spec =
                    ops::lookup(op, Form::Operator).expect("arithmetic ops are in the table");
                self.binary_op(spec, lhs, rhs, span)
            }
        };
        // A binding made before the current branch arm or loop body outlives it: a new
        // differentiated value for it must go through a slot, which `slots_for` provides. If it
        // did not, stop rather than lose the value after the region.
        let outlives_region = self
            .scopes
            .iter()
            .rposition(|s| s.contains_key(&name.to_string()))
            .is_some_and(|i| i < self.region_floor);
        match (current, new) {
            (Binding::Slot(slot), l) => {
                let val = self.operand(l, Use::Plain);
                self.stmts.push(Stmt::SlotWrite { slot, val });
            }
            (Binding::Const { ident, .. }, Lowered::Const { tokens, taint, .. }) => {
                self.stmts.push(Stmt::Verbatim(quote!(#ident = #tokens;)));
                self.bind(&name.to_string(), Binding::Const { ident, taint });
            }
            (_, _) if outlives_region => self.errors.at(
                &name,
                format!(
                    "#[differentiable] cannot follow this assignment: `{name}` was bound outside \
                     this branch or loop and is given a differentiated value here that it could \
                     not see coming; bind a new variable (`let {name}2 = ...`) or start `{name}` \
                     from a tensor expression"
                ),
            ),
            (_, l) => self.bind_lowered(&name, false, None, l, Some(value)),
        }
        Some(())
    }

    /// A statement of constant code, printed from its syntax tree with bindings renamed.
    fn verbatim_expr(&mut self, e: &Expr) {
        if let Lowered::Const { tokens, .. } = self.rewrite(e) {
            self.stmts.push(Stmt::Verbatim(quote!(#tokens;)));
        }
    }

    // ---- control flow ----------------------------------------------------------------------

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

    /// Replaces the binding of `name` where it is defined.
    fn rebind(&mut self, name: &str, b: Binding) {
        if let Some(scope) = self.scopes.iter_mut().rev().find(|s| s.contains_key(name)) {
            scope.insert(name.to_owned(), b);
        }
    }

    // ---- expressions -----------------------------------------------------------------------

    /// Lowers a block's statements in a scope of their own, then its tail with `tail`.
    fn in_block<R>(
        &mut self,
        block: &Block,
        tail: impl FnOnce(&mut Self, Option<&Expr>) -> R,
    ) -> R {
        self.scopes.push(HashMap::new());
        let (init, last) = split_tail(&block.stmts);
        for s in init {
            self.stmt(s);
        }
        let out = tail(self, last);
        self.scopes.pop();
        out
    }

    // ---- ops -------------------------------------------------------------------------------

    /// Whether `e` reads a differentiated value (shape metadata does not count).
    fn mentions_active(&self, e: &Expr) -> bool {
        // A lookup a name, not a list of every active name a call: bodies are long.
        mentions(e, &|name| {
            self.scopes
                .iter()
                .any(|s| s.get(name).is_some_and(|b| self.is_active(b)))
        })
    }

    /// Whether a binding holds a differentiated value (or a list, slot or closure of them).
    fn is_active(&self, b: &Binding) -> bool {
        match b {
            Binding::Active(..) | Binding::Slot(_) | Binding::List(_) => true,
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

/// The message for a value read out of a differentiated tensor that reaches the output.
pub const CONCRETIZATION: &str = "this value is read out of a differentiated tensor, and the \
    result depends on it: its gradient would be silently lost (JAX reports this as a \
    concretization error). Compute it from `stop_gradient(&x)` to cut the gradient on purpose, \
    or keep the computation in tensor ops";

/// `root.path` with the forward pass's index constants.
pub fn path_tokens(root: &Ident, path: &[PathSeg]) -> TokenStream {
    path_place(root.to_token_stream(), path, const_ident, false)
}

/// The place `base.field[index]..` names, each index read from the local `index_local` names;
/// through an `Option` (`Some`) by `as_ref` (`as_mut` when `mutable`). A path ending inside an
/// `Option` is dereferenced, so that the place is the value itself, as for a field.
pub fn path_place(
    base: TokenStream,
    path: &[PathSeg],
    index_local: fn(Const) -> Ident,
    mutable: bool,
) -> TokenStream {
    let segs = path.iter().map(|s| match s {
        PathSeg::Field(m) => quote!(.#m),
        PathSeg::Index(c) => {
            let c = index_local(*c);
            quote!([#c])
        }
        PathSeg::Some if mutable => {
            quote!(.as_mut().expect("rune-ad: the arm taken for `Some`"))
        }
        PathSeg::Some => quote!(.as_ref().expect("rune-ad: the arm taken for `Some`")),
    });
    if matches!(path.last(), Some(PathSeg::Some)) {
        quote!((*#base #(#segs)*))
    } else {
        quote!(#base #(#segs)*)
    }
}
