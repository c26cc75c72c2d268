//! Branches: `if`, `if let` and `match`, as statements or with a value, a `match` on an optional
//! part of a structure parameter included.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Block, Expr, Pat};

use crate::ir::{BranchHead, PathSeg, Slot, Stmt, Use};

use super::control::BlockTail;
use super::syntax::{contains_exit, split_tail, strip};
use super::{path_tokens, Binding, Lowered, Lowerer};

impl Lowerer<'_> {
    /// `if`/`match` as a statement (`value == false`) or as an expression.
    pub(super) fn branch_expr(&mut self, e: &Expr, value: bool) -> Lowered {
        // A branch that touches no differentiated value is constant code, run as written in
        // every variant (it may assign plain variables the rest depends on).
        if !self.mentions_active(e) && !contains_exit(e) {
            let l = self.rewrite(e);
            if value {
                return l;
            }
            if let Lowered::Const { tokens, .. } = l {
                self.stmts.push(Stmt::Verbatim(quote!(#tokens;).into()));
            }
            return Lowered::constant(quote!(()));
        }
        // `if let p = e { a } else { b }` is `match e { p => a, _ => b }`.
        if let Expr::If(i) = e {
            if let Expr::Let(l) = strip(&i.cond) {
                let (pat, scrutinee, then) = (&l.pat, &l.expr, &i.then_branch);
                let otherwise = match &i.else_branch {
                    Some((_, els)) => quote!(#els),
                    None => quote!({}),
                };
                let m: Expr = syn::parse_quote_spanned!(i.if_token.span=>
                    match #scrutinee { #pat => #then, _ => #otherwise }
                );
                return self.branch_expr(&m, value);
            }
        }
        self.slots_for(e);
        let result = value.then(|| self.new_optional_slot());
        let (head, arms) = match e {
            Expr::If(i) => {
                let cond = self.condition(&i.cond);
                let then = self.region(|l| l.arm_block(&i.then_branch, result));
                let otherwise = match &i.else_branch {
                    Some((_, els)) => self.region(|l| l.arm_expr(els, result)),
                    None => Vec::new(),
                };
                (BranchHead::If(cond.into()), vec![then, otherwise])
            }
            Expr::Match(m) => {
                let scrutinee = match self.constant_field(m) {
                    Some(place) => place,
                    None => {
                        let lowered = self.expr(&m.expr);
                        if let Some(option) = self.option_match(&lowered, m, result) {
                            return self.finish_branch(option, result);
                        }
                        match lowered {
                            Lowered::Val(_) => {
                                self.errors.at(
                                    &m.expr,
                                    "`match` cannot inspect a differentiated tensor; match on a \
                                     constant (a `#[nodiff]` field, a number read with `.item()`)",
                                );
                                quote!(())
                            }
                            Lowered::Const { tokens, .. } => tokens,
                        }
                    }
                };
                let mut patterns = Vec::new();
                let mut arms = Vec::new();
                for arm in &m.arms {
                    let mut pattern = TokenStream::new();
                    let body = self.region(|l| {
                        let pat = l.constant_pattern(&arm.pat);
                        let guard = arm.guard.as_ref().map(|(_, g)| match l.rewrite(g) {
                            Lowered::Const { tokens, .. } => quote!(if #tokens),
                            Lowered::Val(_) => quote!(),
                        });
                        pattern = quote!(#pat #guard);
                        l.arm_expr(&arm.body, result);
                    });
                    patterns.push(pattern.into());
                    arms.push(body);
                }
                (
                    BranchHead::Match {
                        scrutinee: scrutinee.into(),
                        patterns,
                    },
                    arms,
                )
            }
            _ => unreachable!("branch_expr takes if and match"),
        };
        self.finish_branch((head, arms), result)
    }

    /// Pushes a branch; its value, when it has one.
    pub(super) fn finish_branch(
        &mut self,
        (head, arms): (BranchHead, Vec<Vec<Stmt>>),
        result: Option<Slot>,
    ) -> Lowered {
        let id = self.new_region();
        self.stmts.push(Stmt::Branch { id, head, arms });
        match result {
            Some(slot) => {
                let out = self.new_val();
                self.stmts.push(Stmt::SlotRead { out, slot });
                Lowered::Val(out)
            }
            None => Lowered::constant(quote!(())),
        }
    }

    /// `match opt { Some(x) => .., None => .. }` (and `if let Some(x) = opt`) on an optional
    /// structure parameter or part of one: a branch on `is_some()`, with `x` the value inside.
    /// The place of a field of a structure parameter that `m` inspects (`match layer.act`,
    /// `match self.layers[i].kind`), read as a constant: a `#[nodiff]` field, which the generated
    /// code checks it is (`constant_scrutinee`: a differentiated field is a compile error there).
    /// `None` for any other scrutinee, and for a match of `Some`/`None` arms, which inspects an
    /// optional parameter ([`Self::option_match`]).
    fn constant_field(&mut self, m: &syn::ExprMatch) -> Option<TokenStream> {
        let Expr::Field(f) = strip(&m.expr) else {
            return None;
        };
        if m.arms.iter().all(|a| is_option_pattern(&a.pat)) || !self.structure_source(&f.base) {
            return None;
        }
        let Lowered::Val(base) = self.expr(&f.base) else {
            return None;
        };
        let (root, mut path) = self.paths.get(&base).cloned()?;
        path.push(PathSeg::Field(f.member.clone()));
        let place = path_tokens(&self.roots[root], &path);
        let rt = quote!(::rune_ad::__private);
        let check = quote_spanned! {f.member.span()=>
            #rt::constant_scrutinee({
                use #rt::{ScrutineeOfConstant as _, ScrutineeOfDifferentiable as _};
                (&&#place).__rune_scrutinee()
            });
        };
        self.stmts.push(Stmt::Verbatim(check.into()));
        Some(place)
    }

    fn option_match(
        &mut self,
        scrutinee: &Lowered,
        m: &syn::ExprMatch,
        result: Option<Slot>,
    ) -> Option<(BranchHead, Vec<Vec<Stmt>>)> {
        let Lowered::Val(v) = scrutinee else {
            return None;
        };
        let (root, path) = self.paths.get(v).cloned()?;
        // Every arm must be `Some(name)`, `Some(_)`, `None` or `_`, without guards: the
        // pattern on `is_some()` and the name bound to the value inside.
        let mut heads = Vec::new();
        for arm in &m.arms {
            if arm.guard.is_some() {
                return None;
            }
            heads.push(match &arm.pat {
                Pat::TupleStruct(t) if t.path.is_ident("Some") && t.elems.len() == 1 => {
                    match &t.elems[0] {
                        Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                            (quote!(true), Some(pi.ident.clone()))
                        }
                        Pat::Wild(_) => (quote!(true), None),
                        _ => return None,
                    }
                }
                Pat::Ident(pi) if pi.ident == "None" => (quote!(false), None),
                Pat::Path(p) if p.path.is_ident("None") => (quote!(false), None),
                Pat::Wild(_) => (quote!(_), None),
                _ => return None,
            });
        }
        let base = path_tokens(&self.roots[root], &path);
        let mut patterns = Vec::new();
        let mut arms = Vec::new();
        for (arm, (pattern, name)) in m.arms.iter().zip(heads) {
            patterns.push(pattern.into());
            let body = self.region(|l| {
                if let Some(name) = &name {
                    let mut inner = path.clone();
                    inner.push(PathSeg::Some);
                    let v = l.leaf(root, inner);
                    l.bind(&name.to_string(), Binding::Active(v, true));
                }
                l.arm_expr(&arm.body, result);
            });
            arms.push(body);
        }
        Some((
            BranchHead::Match {
                scrutinee: quote!(::core::option::Option::is_some(&#base)).into(),
                patterns,
            },
            arms,
        ))
    }

    fn arm_block(&mut self, block: &Block, result: Option<Slot>) {
        let (init, tail) = split_tail(&block.stmts);
        let tail = if result.is_some() { tail } else { None };
        let init = if result.is_some() {
            init
        } else {
            &block.stmts[..]
        };
        // The value is written at the end of the block, inside any guard a `return` or `break`
        // in it opened, where the bindings it reads are the block's last ones.
        let tail = result.zip(tail).map(|(slot, t)| BlockTail::Write(slot, t));
        self.block_stmts(init, tail);
    }

    fn arm_expr(&mut self, e: &Expr, result: Option<Slot>) {
        match strip(e) {
            Expr::Block(b) if b.label.is_none() => self.arm_block(&b.block, result),
            Expr::If(_) | Expr::Match(_) => match result {
                Some(slot) => {
                    let l = self.branch_expr(e, true);
                    let val = self.operand(l, Use::Plain);
                    self.stmts.push(Stmt::SlotWrite { slot, val });
                }
                None => {
                    self.branch_expr(e, false);
                }
            },
            other => {
                if self.control(other) {
                    return;
                }
                if self.assignment(other) {
                    return;
                }
                let l = self.expr(other);
                if let Some(slot) = result {
                    let val = self.operand(l, Use::Plain);
                    self.stmts.push(Stmt::SlotWrite { slot, val });
                } else if let Lowered::Const { tokens, .. } = l {
                    self.stmts.push(Stmt::Verbatim(quote!(#tokens;).into()));
                }
            }
        }
    }
}

/// Whether `pat` is `Some(..)`, `None` or `_`: an arm of a match on an `Option`.
fn is_option_pattern(pat: &Pat) -> bool {
    match pat {
        Pat::TupleStruct(t) => t.path.is_ident("Some"),
        Pat::Ident(pi) => pi.ident == "None",
        Pat::Path(p) => p.path.is_ident("None"),
        Pat::Wild(_) => true,
        _ => false,
    }
}
