//! Statements: `let` (a name, `_`, a tuple of names), assignments (`x = e`, `x op= e`),
//! statement macros and expression statements, and a block's statements in a scope of their own.

use std::collections::HashMap;

use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::{BinOp, Block, Expr, Ident, Local, Pat, Stmt as SynStmt};

use crate::ir::{List, OutShape, Stmt, Use};
use crate::ops::{self, Form};

use super::iter::Item;
use super::syntax::{assignments, new_vec, paren, reached_by, split_tail, strip};
use super::{Binding, Lowered, Lowerer};

impl Lowerer<'_> {
    pub(super) fn stmt(&mut self, stmt: &SynStmt) {
        match stmt {
            SynStmt::Local(local) => self.local(local),
            SynStmt::Item(item) => self
                .stmts
                .push(Stmt::Verbatim(item.to_token_stream().into())),
            SynStmt::Macro(m) => {
                let tokens = self.rewrite_macro_tokens(m.mac.tokens.clone(), &m.mac);
                let path = &m.mac.path;
                let bang = &m.mac.bang_token;
                let tokens = match &m.mac.delimiter {
                    syn::MacroDelimiter::Paren(_) => quote!(#path #bang (#tokens);),
                    syn::MacroDelimiter::Brace(_) => quote!(#path #bang {#tokens}),
                    syn::MacroDelimiter::Bracket(_) => quote!(#path #bang [#tokens];),
                };
                self.stmts.push(Stmt::Verbatim(tokens.into()));
            }
            SynStmt::Expr(e, semi) => {
                if self.control(e) {
                    return;
                }
                if self.assignment(e) {
                    return;
                }
                match self.expr(e) {
                    Lowered::Const { tokens, .. } => {
                        let semi = semi.map(|s| s.to_token_stream());
                        self.stmts
                            .push(Stmt::Verbatim(quote!(#tokens #semi).into()));
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
                if pi.mutability.is_none() {
                    if self.bind_iter(&pi.ident, &init.expr) {
                        return;
                    }
                    let inlined = self.inline_iter(&init.expr);
                    if let Some(item) = self.selection(inlined.as_ref().unwrap_or(&init.expr)) {
                        self.bind_item(pat, item);
                        return;
                    }
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
                            self.stmts
                                .push(Stmt::Verbatim(quote!(let _ = #tokens;).into()));
                        }
                    }
                } else if let Lowered::Const { tokens, .. } = self.expr(&init.expr) {
                    self.stmts
                        .push(Stmt::Verbatim(quote!(let _ = #tokens;).into()));
                }
            }
            Pat::Tuple(t) if t.elems.is_empty() && self.mentions_active(&init.expr) => {
                self.errors.at(
                    t,
                    "bind the value here to a name: `()` cannot hold a differentiated tensor",
                );
            }
            // `let [a, b] = f(..);` of a function returning an array takes its elements as a
            // tuple pattern does; of a constant, it is constant code.
            Pat::Slice(s) if self.mentions_active(&init.expr) => {
                let tuple = Pat::Tuple(syn::PatTuple {
                    attrs: Vec::new(),
                    paren_token: Default::default(),
                    elems: s.elems.clone(),
                });
                let item = self.expr_item(&init.expr, &tuple);
                self.bind_item(&tuple, item);
            }
            Pat::Slice(_) => self.verbatim_let(pat, &init.expr),
            Pat::Tuple(t) if self.bind_pullback(t, &init.expr) => {}
            Pat::Tuple(_) => {
                if let Some(item) = self.selection(&init.expr) {
                    self.bind_item(pat, item);
                    return;
                }
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
            (e, Pat::Tuple(p))
                if p.elems
                    .iter()
                    .any(|q| matches!(unwrapped(q), Pat::Tuple(_))) =>
            {
                let shape = pattern_shape(pat);
                let mut items = self.expr_shaped(e, shape.clone()).into_iter();
                if items.len() != shape.leaves() {
                    return Item::Tuple(Vec::new());
                }
                shaped_item(&shape, &mut items)
            }
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
    pub(super) fn bind_item(&mut self, pat: &Pat, item: Item) {
        match (pat, item) {
            (Pat::Type(pt), item) => self.bind_item(&pt.pat, item),
            (Pat::Paren(p), item) => self.bind_item(&p.pat, item),
            (Pat::Wild(_), Item::Value(Lowered::Val(v), _)) if self.call_outs.contains(&v) => {
                self.discarded.insert(v);
            }
            (Pat::Wild(_), _) => {}
            (Pat::Ident(pi), Item::Value(Lowered::Val(v), true))
                if pi.by_ref.is_none() && pi.subpat.is_none() && pi.mutability.is_none() =>
            {
                self.bind(&pi.ident.to_string(), Binding::Active(v, true));
            }
            (Pat::Ident(pi), Item::Value(l, _)) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                self.bind_lowered(&pi.ident, pi.mutability.is_some(), None, l, None);
            }
            (Pat::Ident(pi), Item::List(list))
                if pi.by_ref.is_none() && pi.subpat.is_none() && pi.mutability.is_none() =>
            {
                self.bind(&pi.ident.to_string(), Binding::List(list));
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
    pub(super) fn ref_binding(&self, e: Option<&Expr>) -> bool {
        match e.map(strip) {
            Some(Expr::Reference(_)) => true,
            Some(Expr::Path(p)) => p.path.get_ident().is_some_and(|i| {
                matches!(self.lookup(&i.to_string()), Some(Binding::Active(_, true)))
            }),
            _ => false,
        }
    }

    pub(super) fn bind_lowered(
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
                self.stmts.push(Stmt::Verbatim(
                    quote!(let #mutability #new #ty = #tokens;).into(),
                ));
                self.bind(&ident.to_string(), Binding::Const { ident: new, taint });
            }
        }
    }

    /// `v[i] = e` and `v[i] op= e` of a local list (a `Vec` or array given differentiated
    /// values), `i` a constant.
    fn element_assignment(
        &mut self,
        list: List,
        ix: &syn::ExprIndex,
        value: &Expr,
        op: Option<(&'static str, proc_macro2::Span)>,
    ) {
        let index = match self.expr(&ix.index) {
            Lowered::Const { tokens, .. } => tokens,
            Lowered::Val(_) => {
                self.errors.at(&ix.index, "an index must be a constant");
                return;
            }
        };
        let index = self.hoist(index, Some(quote!(usize)), Use::Plain);
        let rhs = self.expr(value);
        let new = match op {
            None => rhs,
            Some(("other", _)) => {
                self.errors.at(
                    ix,
                    "only `=`, `+=`, `-=`, `*=` and `/=` write an element of a differentiated list",
                );
                return;
            }
            Some((op, span)) => {
                let current = self.list_get(list, index);
                let spec =
                    crate::ops::lookup(op, crate::ops::Form::Operator).expect("in the table");
                self.binary_op(spec, current, rhs, span)
            }
        };
        self.list_set(list, index, new);
    }

    /// Lowers `x = e` and `x op= e`; `false` (nothing lowered) when `e` is not an assignment.
    pub(super) fn assignment(&mut self, e: &Expr) -> bool {
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
                    _ => return false,
                };
                (&*b.left, &*b.right, Some((op, e.span())))
            }
            _ => return false,
        };
        let name = match strip(target) {
            Expr::Path(p) if p.path.get_ident().is_some() => p.path.get_ident().cloned(),
            _ => None,
        };
        if let Expr::Index(ix) = strip(target) {
            if let Some(list) = self.list_of(&ix.expr) {
                if self.array_param(list).is_none() {
                    self.element_assignment(list, ix, value, op);
                    return true;
                }
            }
        }
        let Some(name) = name else {
            if self.mentions_active(target) {
                self.errors.at(
                    target,
                    "a #[differentiable] function cannot assign to a field or element of a \
                     differentiated value; bind the new tensor to a variable instead",
                );
                return true;
            }
            if self.mentions_active(value) {
                self.errors.at(
                    value,
                    "a differentiated value cannot be stored into a field or element of a \
                     constant (its gradient would be lost); bind it to a variable instead",
                );
                return true;
            }
            // Assignment to a field or an element of a constant: constant code as written.
            self.verbatim_expr(e);
            return true;
        };
        let current = match self.lookup(&name.to_string()) {
            Some(b) => b.clone(),
            None => {
                self.errors
                    .at(&name, format!("cannot find `{name}` in this function"));
                return true;
            }
        };
        if let Binding::List(_) = current {
            self.errors.at(
                target,
                "a `Vec` of differentiated tensors cannot be reassigned; declare a new one with \
                 `let` (inside the loop, for one per iteration)",
            );
            return true;
        }
        if let Binding::Iter(_) = current {
            self.errors.at(
                target,
                "an iterator over differentiated values cannot be reassigned; bind the new one to \
                 a new name",
            );
            return true;
        }
        if let Binding::Closure(_) | Binding::Pullback(_) = current {
            self.errors.at(
                target,
                "a variable holding a closure cannot be reassigned in a #[differentiable] \
                 function; bind the new closure to a new name",
            );
            return true;
        }
        // A plain variable given a value that reads no differentiated one: constant code.
        if matches!(current, Binding::Const { .. }) && !self.mentions_active(value) {
            self.verbatim_expr(e);
            return true;
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
                    Binding::Local
                    | Binding::Closure(_)
                    | Binding::List(_)
                    | Binding::Iter(_)
                    | Binding::Pullback(_) => {
                        unreachable!(
                            "locals exist only while renaming; closures, lists and iterators are \
                             refused above"
                        )
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
                    self.stmts.push(Stmt::Verbatim(
                        quote!(#lhs_tokens #op_tokens #rhs_tokens;).into(),
                    ));
                    if let (Some(t), Binding::Const { ident, .. }) = (taint, current) {
                        self.rebind(
                            &name.to_string(),
                            Binding::Const {
                                ident,
                                taint: Some(t),
                            },
                        );
                    }
                    return true;
                }
                if op == "other" {
                    self.errors.at(
                        e,
                        "this operator cannot take a differentiated tensor; supported: \
                         `+= -= *= /=`",
                    );
                    return true;
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
                self.stmts
                    .push(Stmt::Verbatim(quote!(#ident = #tokens;).into()));
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
        true
    }

    /// Statement `k` of `stmts`: a `let` without a value sees the statements after it.
    pub(super) fn stmt_of(&mut self, stmts: &[SynStmt], k: usize) {
        match &stmts[k] {
            SynStmt::Local(local) if local.init.is_none() => {
                self.deferred_local(local, &stmts[k + 1..]);
            }
            s => self.stmt(s),
        }
    }

    /// `let r;`, given its value later by assignments in `rest`, the statements after it (in
    /// the arms of a branch, typically): a slot when one of those values reads a differentiated
    /// one, plain Rust otherwise. The slot starts from a placeholder that is never read, since
    /// rustc checks the function as written, where `r` is assigned before any use.
    fn deferred_local(&mut self, local: &Local, rest: &[SynStmt]) {
        let (pat, ty) = match &local.pat {
            Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            other => (other, None),
        };
        let Pat::Ident(pi) = pat else {
            self.errors.at(
                local,
                "a `let` without a value in a #[differentiable] function binds a name (`let r;`)",
            );
            return;
        };
        if pi.by_ref.is_some() || pi.subpat.is_some() {
            self.errors.at(pat, "bind a plain name here (`let r;`)");
            return;
        }
        let name = pi.ident.to_string();
        let later = Expr::Block(syn::ExprBlock {
            attrs: Vec::new(),
            label: None,
            block: Block {
                brace_token: Default::default(),
                stmts: rest.to_vec(),
            },
        });
        let assigned = assignments(&later);
        if reached_by(self.active_names(), &assigned, self.scalar_out).contains(&name) {
            let slot = self.new_slot();
            let placeholder = self.hoist(quote!(::rune_ad::__private::SumStart), None, Use::Plain);
            self.stmts.push(Stmt::SlotInit {
                slot,
                init: crate::ir::Operand::Const(placeholder),
            });
            self.bind(&name, Binding::Slot(slot));
        } else {
            let new = self.fresh_const_ident(&name);
            let mutability = pi.mutability.map(|m| quote!(#m));
            let ty = ty.map(|t| quote!(: #t));
            self.stmts
                .push(Stmt::Verbatim(quote!(let #mutability #new #ty;).into()));
            self.bind(
                &name,
                Binding::Const {
                    ident: new,
                    taint: None,
                },
            );
        }
    }

    /// `let pat = init;` of constant code: the names the pattern binds are constants.
    fn verbatim_let(&mut self, pat: &Pat, init: &Expr) {
        let Lowered::Const { tokens, .. } = self.rewrite(init) else {
            return;
        };
        let renamed = self.constant_pattern(pat);
        self.stmts
            .push(Stmt::Verbatim(quote!(let #renamed = #tokens;).into()));
    }

    /// `pat` with each name it binds bound to a fresh constant, renamed so.
    pub(super) fn constant_pattern(&mut self, pat: &Pat) -> Pat {
        let mut renamed = pat.clone();
        let mut idents = Vec::new();
        super::syntax::collect_pattern_idents(&renamed, &mut idents);
        for ident in &idents {
            let new = self.fresh_const_ident(&ident.to_string());
            self.bind(
                &ident.to_string(),
                Binding::Const {
                    ident: new,
                    taint: None,
                },
            );
        }
        super::rename::rename_pattern(&mut renamed, self);
        renamed
    }

    /// A statement of constant code, printed from its syntax tree with bindings renamed.
    fn verbatim_expr(&mut self, e: &Expr) {
        if let Lowered::Const { tokens, .. } = self.rewrite(e) {
            self.stmts.push(Stmt::Verbatim(quote!(#tokens;).into()));
        }
    }

    /// Lowers a block's statements in a scope of their own, then its tail with `tail`.
    pub(super) fn in_block<R>(
        &mut self,
        block: &Block,
        tail: impl FnOnce(&mut Self, Option<&Expr>) -> R,
    ) -> R {
        self.scopes.push(HashMap::new());
        let (init, last) = split_tail(&block.stmts);
        for k in 0..init.len() {
            self.stmt_of(&block.stmts, k);
        }
        let out = tail(self, last);
        self.scopes.pop();
        out
    }
}

/// `pat` without a type ascription or parentheses.
fn unwrapped(pat: &Pat) -> &Pat {
    match pat {
        Pat::Type(pt) => unwrapped(&pt.pat),
        Pat::Paren(p) => unwrapped(&p.pat),
        other => other,
    }
}

/// How a tuple pattern nests: a tuple for each tuple pattern, one value for anything else.
fn pattern_shape(pat: &Pat) -> OutShape {
    match unwrapped(pat) {
        Pat::Tuple(t) => OutShape::Tuple(t.elems.iter().map(pattern_shape).collect()),
        _ => OutShape::One,
    }
}

/// Values arranged as `shape` for a pattern to bind.
fn shaped_item(shape: &OutShape, values: &mut impl Iterator<Item = Lowered>) -> Item {
    match shape {
        OutShape::One => Item::Value(values.next().expect("a value for each leaf"), false),
        OutShape::Tuple(parts) => {
            Item::Tuple(parts.iter().map(|p| shaped_item(p, values)).collect())
        }
    }
}
