//! Control flow: regions (the statements of a branch arm or a loop body), blocks cut into stages
//! after a statement that may leave early, `break`, `continue`, `return` and `?`, conditions, the
//! slots that carry a variable across a region, and loops (`for`, `while`, `while let`, `loop`).
//! The returned value (`Ok(value)` in a function returning a `Result`) is lowered here too.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::{Block, Expr, Ident, Pat, Stmt as SynStmt};

use crate::ir::{BranchHead, LoopHead, Operand, Slot, Stmt, Use};
use crate::names::{const_ident, hidden};
use crate::ops::{self, Form};

use super::flat::JOINED;
use super::syntax::{assigned_names, assignments, exits, is_path, reached_by, strip, Within};
use super::{Binding, LoopCtx, Lowered, Lowerer};
use crate::diag::CONCRETIZATION;

/// What the end of a block does with its tail expression.
#[derive(Clone, Copy)]
pub(super) enum BlockTail<'a> {
    /// Returns it from the function (written to the output slots).
    Return(&'a Expr),
    /// Writes it to a branch's result slot.
    Write(Slot, &'a Expr),
}

impl Lowerer<'_> {
    /// Lowers `f`'s statements into a list of their own (a branch arm or a loop body).
    pub(super) fn region(&mut self, f: impl FnOnce(&mut Self)) -> Vec<Stmt> {
        let outer = std::mem::take(&mut self.stmts);
        let floor = std::mem::replace(&mut self.region_floor, self.scopes.len());
        self.scopes.push(HashMap::new());
        f(self);
        self.scopes.pop();
        self.region_floor = floor;
        std::mem::replace(&mut self.stmts, outer)
    }

    /// The statements of a block. Up to the first statement that may leave early (`break`,
    /// `continue`, `return`) they run as written; the rest runs in [`Stmt::Stages`], cut after
    /// each further such statement. `tail`, with an early `return` in the function, is the
    /// final value (written to the output slots).
    pub(super) fn block_stmts(&mut self, stmts: &[SynStmt], tail: Option<BlockTail>) {
        let within = if self.loops.is_empty() {
            Within::Function
        } else {
            Within::Loop
        };
        let leaves = |i: usize| (i + 1 < stmts.len() || tail.is_some()) && exits(&stmts[i], within);
        let Some(first) = (0..stmts.len()).find(|&i| leaves(i)) else {
            for k in 0..stmts.len() {
                self.stmt_of(stmts, k);
            }
            self.block_tail(tail);
            return;
        };
        for k in 0..=first {
            self.stmt_of(stmts, k);
        }
        let guard = self.guard();
        let stages = self.guarded(|l| {
            let mut stages = Vec::new();
            for i in first + 1..stmts.len() {
                l.stmt_of(stmts, i);
                if leaves(i) {
                    stages.push(std::mem::take(&mut l.stmts));
                }
            }
            l.block_tail(tail);
            stages.push(std::mem::take(&mut l.stmts));
            stages
        });
        let id = self.new_region();
        self.stmts.push(Stmt::Stages {
            id,
            guard: guard.into(),
            stages,
        });
    }

    /// Runs `f` on statements of its own in a scope of its own, for the rest of a block after a
    /// statement that may leave early. That rest runs to the end of the block (its tail
    /// included), so a binding it makes or changes is seen by everything after it: its
    /// assignments need no slots (unlike [`Self::region`], the floor stays where it is).
    fn guarded<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let outer = std::mem::take(&mut self.stmts);
        self.scopes.push(HashMap::new());
        let result = f(self);
        self.scopes.pop();
        self.stmts = outer;
        result
    }

    fn block_tail(&mut self, tail: Option<BlockTail>) {
        match tail {
            Some(BlockTail::Return(t)) => self.write_return(t),
            Some(BlockTail::Write(slot, t)) => {
                let l = self.expr(t);
                let val = self.operand(l, Use::Plain);
                self.stmts.push(Stmt::SlotWrite { slot, val });
            }
            None => {}
        }
    }

    /// The returned value. A function returning a number returns its 0-d tensor's number, so
    /// `e.item()` there is `e`: the conversion the generated code makes anyway.
    pub(super) fn output_expr(&mut self, e: &Expr) -> Lowered {
        let e = self.ok_value(e);
        if self.scalar_out {
            if let Expr::MethodCall(mc) = strip(e) {
                if mc.method == "item" && mc.args.is_empty() && self.mentions_active(&mc.receiver) {
                    return self.expr(&mc.receiver);
                }
            }
        }
        self.expr(e)
    }

    /// The value inside `Ok(value)`, the way a function returning a `Result` ends.
    pub(super) fn ok_value<'x>(&mut self, e: &'x Expr) -> &'x Expr {
        if !self.fallible {
            return e;
        }
        match strip(e) {
            Expr::Call(c) if c.args.len() == 1 && is_path(&c.func, "Ok") => &c.args[0],
            other => {
                self.errors.at(
                    other,
                    "a #[differentiable] function returning a `Result` ends with `Ok(value)` (and \
                     leaves early with `?` or `return Err(..)`)",
                );
                e
            }
        }
    }

    /// `e?` in a function returning a `Result`: a `try_` op (`x.try_reshape(..)?`) is the op
    /// with its `try_` twin in the forward pass; a call of a differentiable function returning a
    /// `Result` (`g(x)?`) passes its error on; constant code keeps its `?`.
    pub(super) fn try_expr(&mut self, t: &syn::ExprTry) -> Lowered {
        let inner = strip(&t.expr);
        if !self.mentions_active(inner) {
            return self.rewrite(&Expr::Try(t.clone()));
        }
        let before = self.stmts.len();
        let lowered = match inner {
            Expr::MethodCall(mc) if mc.method.to_string().starts_with("try_") => {
                let mut plain = mc.clone();
                let name = mc.method.to_string();
                plain.method = Ident::new(&name["try_".len()..], mc.method.span());
                self.method_call(&plain)
            }
            Expr::Call(c)
                if Self::function_op_name(c).is_some_and(|n| {
                    n.starts_with("try_")
                        && ops::lookup(&n["try_".len()..], Form::Function).is_some()
                }) =>
            {
                let mut plain = c.clone();
                if let Expr::Path(p) = &mut *plain.func {
                    if let Some(last) = p.path.segments.last_mut() {
                        let name = last.ident.to_string();
                        last.ident = Ident::new(&name["try_".len()..], last.ident.span());
                    }
                }
                self.call_expr(&plain)
            }
            Expr::Call(_) | Expr::MethodCall(_) => self.expr(inner),
            _ => {
                self.errors.at(
                    t,
                    "`?` applies here to a `try_` op (`x.try_reshape(..)?`) or a call of a \
                     #[differentiable] function returning a `Result`",
                );
                return Lowered::constant(quote!(::core::unreachable!()));
            }
        };
        // The op or call just lowered is the one `?` applies to.
        let marked = match self.stmts[before..].last_mut() {
            Some(Stmt::Op { fallible, .. }) | Some(Stmt::Call { fallible, .. }) => {
                *fallible = true;
                true
            }
            _ => false,
        };
        if !marked {
            self.errors.at(
                t,
                "`?` applies here to a `try_` op (`x.try_reshape(..)?`) or a call of a \
                 #[differentiable] function returning a `Result`",
            );
        }
        lowered
    }

    /// `!(flags)`: true while nothing has left the current loop body or the function.
    fn guard(&self) -> TokenStream {
        let mut flags: Vec<&Ident> = Vec::new();
        if let Some(r) = &self.ret {
            flags.push(&r.flag);
        }
        if let Some(l) = self.loops.last() {
            flags.push(&l.brk);
            flags.push(&l.cont);
        }
        quote!(!(#(#flags)||*))
    }

    /// Writes a returned value to the output slots.
    fn write_return(&mut self, e: &Expr) {
        let Some(slots) = self.ret.as_ref().map(|r| r.slots.clone()) else {
            return;
        };
        let items = if self.outputs == 1 {
            vec![self.output_expr(e)]
        } else {
            let e = self.ok_value(e);
            self.expr_multi(e, self.outputs)
        };
        for (slot, item) in slots.into_iter().zip(items) {
            if let Lowered::Const { taint: Some(t), .. } = &item {
                self.errors.push(t.error(CONCRETIZATION));
            }
            let val = self.operand(item, Use::Plain);
            self.stmts.push(Stmt::SlotWrite { slot, val });
        }
    }

    /// Lowers `break`, `continue`, `return` and loops in statement position; `false` (nothing
    /// lowered) for anything else.
    pub(super) fn control(&mut self, e: &Expr) -> bool {
        match e {
            Expr::Break(_) | Expr::Continue(_) => {
                let (labelled, valued, what) = match e {
                    Expr::Break(b) => (b.label.is_some(), b.expr.is_some(), "break"),
                    Expr::Continue(c) => (c.label.is_some(), false, "continue"),
                    _ => unreachable!("matched above"),
                };
                if labelled || valued {
                    self.errors.at(
                        e,
                        format!("`{what}` with a label or a value is not supported here"),
                    );
                }
                match self.loops.last() {
                    Some(l) => {
                        let mut flags = vec![if what == "break" { &l.brk } else { &l.cont }];
                        // A `break` in a flattened loop leaves the loop it is flattened from.
                        if what == "break" && l.joined {
                            flags.extend(self.loops.iter().rev().nth(1).map(|outer| &outer.brk));
                        }
                        self.stmts
                            .push(Stmt::Verbatim(quote!(#(#flags = true;)*).into()));
                    }
                    None => self.errors.at(e, format!("`{what}` outside a loop")),
                }
            }
            Expr::Return(r) => {
                if self.ret.is_none() {
                    self.errors.at(
                        r,
                        "`return` is supported as the last statement, or inside a branch or loop",
                    );
                    return true;
                }
                match &r.expr {
                    // `return Err(e)` leaves every generated function with the error at once.
                    Some(v)
                        if self.fallible
                            && matches!(strip(v), Expr::Call(c) if c.args.len() == 1 && is_path(&c.func, "Err")) =>
                    {
                        let Expr::Call(c) = strip(v) else {
                            unreachable!("matched")
                        };
                        match self.expr(&c.args[0]) {
                            Lowered::Const { tokens, .. } => self.stmts.push(Stmt::Verbatim(quote! {
                                return ::core::result::Result::Err(::core::convert::From::from(#tokens));
                            }.into())),
                            Lowered::Val(_) => self.errors.at(
                                &c.args[0],
                                "an error cannot hold a differentiated tensor",
                            ),
                        }
                        return true;
                    }
                    Some(v) => self.write_return(v),
                    None => self.errors.at(r, "`return` needs the value to return"),
                }
                let mut flags: Vec<Ident> = self.loops.iter().map(|l| l.brk.clone()).collect();
                flags.extend(self.ret.as_ref().map(|r| r.flag.clone()));
                self.stmts
                    .push(Stmt::Verbatim(quote!(#(#flags = true;)*).into()));
            }
            Expr::ForLoop(f) => {
                let iter = self
                    .inline_iter(&f.expr)
                    .unwrap_or_else(|| (*f.expr).clone());
                if self.mentions_active(&iter) {
                    match self.flat(&iter) {
                        Some(Ok(flat)) => {
                            self.flat_for(&flat, &f.pat, &f.body);
                            return true;
                        }
                        Some(Err(_)) => return true,
                        None => {}
                    }
                }
                self.lower_loop(e, f.label.as_ref(), &f.body, Some((&f.pat, &iter)))
            }
            Expr::While(w) if matches!(strip(&w.cond), Expr::Let(_)) => {
                // `while let p = e { body }` is `loop { match e { p => body, _ => break } }`.
                let Expr::Let(l) = strip(&w.cond) else {
                    unreachable!("checked")
                };
                let (pat, scrutinee, body) = (&l.pat, &l.expr, &w.body);
                let desugared: Expr = syn::parse_quote_spanned!(w.while_token.span=>
                    loop { match #scrutinee { #pat => #body, _ => break, } }
                );
                let Expr::Loop(lp) = &desugared else {
                    unreachable!("a loop")
                };
                self.lower_loop(&desugared, w.label.as_ref(), &lp.body, None)
            }
            Expr::While(w) => self.lower_loop(e, w.label.as_ref(), &w.body, None),
            Expr::Loop(lp) => self.lower_loop(e, lp.label.as_ref(), &lp.body, None),
            Expr::If(_) | Expr::Match(_) => {
                self.branch_expr(e, false);
            }
            // A block statement (`{ let y = ..; total += y; }`) is a branch always taken: its
            // assignments to variables declared before it, differentiated or not, go through
            // as a branch's do. Lowered as a value, its assignments were lost to the
            // derivatives.
            Expr::Block(b) if b.label.is_some() => {
                self.errors.at(
                    &b.label,
                    "a labelled block (`'a: { .. break 'a; .. }`) is not supported in a \
                     #[differentiable] function; write the exit as an `if` (or a `loop` with \
                     `break`)",
                );
            }
            Expr::Block(b) => {
                let block = &b.block;
                let desugared: Expr = syn::parse_quote_spanned!(block.brace_token.span.join()=>
                    if true #block
                );
                self.branch_expr(&desugared, false);
            }
            _ => return false,
        }
        true
    }

    /// Lowers a loop condition or branch condition: a constant `bool`.
    pub(super) fn condition(&mut self, cond: &Expr) -> TokenStream {
        if let Expr::Let(l) = strip(cond) {
            self.errors.at(
                l,
                "`let` chains (`if let .. && ..`) are not supported in #[differentiable] \
                 functions; nest the conditions or use `match`",
            );
            return quote!(false);
        }
        match self.expr(cond) {
            Lowered::Val(_) => {
                self.errors.at(
                    cond,
                    "a condition must be a constant `bool`; a differentiated tensor cannot \
                     decide control flow (use `where_cond` to select elementwise, or compare \
                     its value read with `.item()`)",
                );
                quote!(false)
            }
            Lowered::Const { tokens, .. } => tokens,
        }
    }

    /// Turns variables that the region may assign a differentiated value to into slots.
    pub(super) fn slots_for(&mut self, region: &Expr) {
        // Names that may hold a differentiated value in the region: those that do now, and those
        // given a value computed from one (items of a loop over a structure parameter included),
        // to a fixed point.
        let assigned = assignments(region);
        let names = reached_by(self.active_names(), &assigned, self.scalar_out);
        // A name the region binds anew (`for layer in ..` inside a loop over layers) shadows
        // the binding outside and needs no slot; one it assigns to does.
        let changed = assigned_names(region);
        for (name, _) in &assigned {
            if !names.contains(name) || !changed.contains(name) {
                continue;
            }
            let init = match self.lookup(name).cloned() {
                Some(Binding::Active(v, _)) => Some(Operand::Val(v)),
                Some(Binding::Const { ident, .. }) => Some(Operand::Const(self.hoist(
                    ident.into_token_stream(),
                    None,
                    Use::Plain,
                ))),
                Some(
                    Binding::Slot(_)
                    | Binding::Local
                    | Binding::Closure(_)
                    | Binding::List(_)
                    | Binding::Iter(_)
                    | Binding::Pullback(_),
                )
                | None => None,
            };
            if let Some(init) = init {
                let slot = self.new_slot();
                self.stmts.push(Stmt::SlotInit { slot, init });
                self.rebind(name, Binding::Slot(slot));
            }
        }
    }

    fn lower_loop(
        &mut self,
        e: &Expr,
        label: Option<&syn::Label>,
        body: &Block,
        for_head: Option<(&Pat, &Expr)>,
    ) {
        let joined = label.is_some_and(|l| l.name.ident == JOINED);
        if let Some(l) = label.filter(|_| !joined) {
            self.errors.at(
                l,
                "loop labels are not supported in #[differentiable] functions",
            );
        }
        self.slots_for(e);
        let id = self.new_region();
        let brk = hidden(&format!("break{id}"));
        let cont = hidden(&format!("continue{id}"));
        // A `for` loop's iterator is evaluated once, where the loop starts. Looping over a
        // `Vec` of a structure parameter loops over its indices.
        let chain = for_head.and_then(|(_, iter)| self.chain(iter));
        let iter = for_head.map(|(_, iter)| match &chain {
            Some(chain) => {
                let n = const_ident(chain.count);
                quote!(0..#n)
            }
            None => match self.expr(iter) {
                Lowered::Val(_) => {
                    self.errors.at(
                        iter,
                        "a loop cannot iterate over a differentiated tensor; loop over indices \
                     (`for i in 0..n`) and select with ops such as `shrink` or `gather`",
                    );
                    quote!(::core::iter::empty::<()>())
                }
                Lowered::Const { tokens, .. } => tokens,
            },
        });
        self.loops.push(LoopCtx {
            brk: brk.clone(),
            cont: cont.clone(),
            joined,
        });
        let while_cond = match e {
            Expr::While(w) => Some(&*w.cond),
            _ => None,
        };
        let body_stmts = self.region(|l| {
            l.stmts.push(Stmt::Verbatim(
                quote!(let mut #brk = false; let mut #cont = false;).into(),
            ));
            match (for_head, &chain) {
                (Some((pat, _)), Some(chain)) => {
                    let trip = hidden(&format!("item{id}"));
                    l.chain_body(chain, &trip, |l, item| {
                        l.bind_item(pat, item);
                        l.block_stmts(&body.stmts, None);
                    });
                    l.stmts.push(Stmt::Verbatim(
                        quote!(let _ = #cont; if #brk { break; }).into(),
                    ));
                    return;
                }
                (Some((pat, _)), None) => {
                    let destructure = l.bind_pattern(pat, id);
                    l.stmts.push(destructure);
                }
                _ => {}
            }
            match while_cond {
                Some(c) => {
                    // `while c { body }` runs as `loop { if !c { break } body }`.
                    let cond = l.condition(c);
                    let stop =
                        l.region(|l| l.stmts.push(Stmt::Verbatim(quote!(#brk = true;).into())));
                    let rid = l.new_region();
                    l.stmts.push(Stmt::Branch {
                        id: rid,
                        head: BranchHead::If(quote!(!(#cond)).into()),
                        arms: vec![stop, Vec::new()],
                    });
                    // The body is the rest of the loop's block after a statement that may
                    // leave it: stages, the first running when the condition held.
                    let guard = l.guard();
                    let stages = vec![l.guarded(|l| {
                        l.block_stmts(&body.stmts, None);
                        std::mem::take(&mut l.stmts)
                    })];
                    let rid = l.new_region();
                    l.stmts.push(Stmt::Stages {
                        id: rid,
                        guard: guard.into(),
                        stages,
                    });
                }
                None => l.block_stmts(&body.stmts, None),
            }
            l.stmts.push(Stmt::Verbatim(
                quote!(let _ = #cont; if #brk { break; }).into(),
            ));
        });
        self.loops.pop();
        let head = match iter {
            Some(iter) => LoopHead::For {
                pattern: hidden(&format!("item{id}")).into_token_stream().into(),
                iter: iter.into(),
            },
            None => LoopHead::Loop,
        };
        self.stmts.push(Stmt::Loop {
            id,
            head,
            body: body_stmts,
        });
    }

    /// Binds a `for` pattern (names, tuples, `_`) to the loop's item; returns the statement that
    /// destructures it.
    fn bind_pattern(&mut self, pat: &Pat, id: usize) -> Stmt {
        let renamed = self.constant_pattern(pat);
        let item = hidden(&format!("item{id}"));
        Stmt::Verbatim(quote!(let #renamed = #item;).into())
    }
}
