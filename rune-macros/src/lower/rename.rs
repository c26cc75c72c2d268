//! Constant code as written, with the function's bindings renamed: the `Renamer` visitor over
//! syntax trees, and the renaming of macro tokens (names captured by format strings included)
//! and of the names a pattern binds.

use std::collections::HashMap;

use proc_macro2::{TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Block, Expr, Ident, Local, Pat};

use crate::ir::{Stmt, Taint};
use crate::names::val_ident;
use crate::ops;

use super::call::PULLBACK_USES;
use super::syntax::{collect_pattern_idents, format_captures, is_compound_assignment, strip};
use super::{Binding, Lowered, Lowerer};

impl Lowerer<'_> {
    /// Constant code as written, with bindings renamed; reading a differentiated tensor in it
    /// marks the result as tainted.
    pub(super) fn rewrite(&mut self, e: &Expr) -> Lowered {
        let is_ref = matches!(strip(e), Expr::Reference(_));
        let mut e = e.clone();
        let mut r = Renamer {
            lowerer: self,
            taint: None,
            assigned: Vec::new(),
        };
        r.visit_expr_mut(&mut e);
        let (taint, assigned) = (r.taint, r.assigned);
        // A plain variable assigned (or mutated through a method) from a value read out of a
        // differentiated tensor carries that taint on.
        for (name, t) in assigned {
            if let Some(Binding::Const { ident, taint: None }) = self.lookup(&name).cloned() {
                self.rebind(
                    &name,
                    Binding::Const {
                        ident,
                        taint: Some(t),
                    },
                );
            }
        }
        Lowered::Const {
            tokens: e.into_token_stream(),
            taint,
            is_ref,
        }
    }

    /// A macro's tokens with the function's bindings renamed. Macros that print or check
    /// (`println!`, `assert!`, `format!`, ...) may read differentiated values; the value a
    /// `format!` makes from one is tainted (returned). Other macros may not read them.
    pub(super) fn rewrite_macro_tokens(
        &mut self,
        tokens: TokenStream,
        mac: &syn::Macro,
    ) -> TokenStream {
        self.rewrite_macro(tokens, mac).0
    }

    pub(super) fn rewrite_macro(
        &mut self,
        tokens: TokenStream,
        mac: &syn::Macro,
    ) -> (TokenStream, Option<Taint>) {
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        let reader = READING_MACROS.contains(&name.as_str());
        // `{name}` captured inside a format string: pass it as a named argument, renamed.
        let captured = if reader {
            format_captures(&tokens)
        } else {
            Vec::new()
        };
        let mut active = None;
        let mut out = self.rename_tokens(tokens, reader, &mut active);
        for ident in captured {
            let Some(renamed) = self.renamed_ident(&ident, reader, &mut active) else {
                continue;
            };
            let trailing = out
                .clone()
                .into_iter()
                .last()
                .is_some_and(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','));
            let comma = (!trailing).then(|| quote!(,));
            out = quote!(#out #comma #ident = #renamed);
        }
        match active {
            Some(read) if !reader => {
                self.errors.at(
                    mac,
                    format!(
                        "the macro `{name}!` cannot use the differentiated tensor `{read}` in a \
                         #[differentiable] function: only printing and checking macros \
                         (`println!`, `assert!`, `format!`, `dbg!`, ...) may read it; use \
                         `stop_gradient(&{read})` to read its value elsewhere"
                    ),
                );
                (out, None)
            }
            Some(_) => (out, Some(Taint::of(mac))),
            None => (out, None),
        }
    }

    /// The identifier a binding named `i` is written as inside a macro, if it is renamed;
    /// records a read of a differentiated value in `active`.
    fn renamed_ident(
        &mut self,
        i: &Ident,
        reader: bool,
        active: &mut Option<String>,
    ) -> Option<Ident> {
        let renamed = match self.lookup(&i.to_string()).cloned()? {
            Binding::Const { ident, .. } => ident,
            Binding::Active(v, _) => {
                *active = Some(i.to_string());
                val_ident(v)
            }
            Binding::Slot(slot) if reader => {
                *active = Some(i.to_string());
                let out = self.new_val();
                self.stmts.push(Stmt::SlotRead { out, slot });
                val_ident(out)
            }
            Binding::Slot(_) => {
                *active = Some(i.to_string());
                return None;
            }
            Binding::List(l) => {
                *active = Some(i.to_string());
                self.lists[l.0].clone()
            }
            Binding::Closure(index) => match &self.closures[index].constant {
                Some(c) => c.clone(),
                None => {
                    *active = Some(i.to_string());
                    return None;
                }
            },
            Binding::Local => return None,
            Binding::Iter(_) | Binding::Pullback(_) => {
                *active = Some(i.to_string());
                return None;
            }
        };
        let mut new = renamed;
        new.set_span(new.span().located_at(i.span()));
        Some(new)
    }

    fn rename_tokens(
        &mut self,
        tokens: TokenStream,
        reader: bool,
        active: &mut Option<String>,
    ) -> TokenStream {
        let mut out = Vec::new();
        let mut after_dot = false;
        for tt in tokens {
            let next = match tt {
                // A name after `.` is a field or a method, not a binding.
                TokenTree::Ident(i) if !after_dot => match self.renamed_ident(&i, reader, active) {
                    Some(new) => TokenTree::Ident(new),
                    None => TokenTree::Ident(i),
                },
                TokenTree::Group(g) => {
                    let mut new = proc_macro2::Group::new(
                        g.delimiter(),
                        self.rename_tokens(g.stream(), reader, active),
                    );
                    new.set_span(g.span());
                    TokenTree::Group(new)
                }
                other => other,
            };
            after_dot = matches!(&next, TokenTree::Punct(p) if p.as_char() == '.');
            out.push(next);
        }
        out.into_iter().collect()
    }
}

/// Renames bindings inside constant code and notes reads of differentiated tensors.
///
/// Names bound inside the code (`let`, closure parameters, patterns) are scoped as Rust scopes
/// them, so that they shadow the function's bindings of the same name and stay as written.
struct Renamer<'l, 'e> {
    lowerer: &'l mut Lowerer<'e>,
    taint: Option<Taint>,
    /// Plain variables of the function assigned or mutated from a tainted value.
    assigned: Vec<(String, Taint)>,
}

impl Renamer<'_, '_> {
    /// Runs `f` in a scope of its own for names bound inside constant code.
    fn scoped(&mut self, f: impl FnOnce(&mut Self)) {
        self.lowerer.scopes.push(HashMap::new());
        f(self);
        self.lowerer.scopes.pop();
    }

    fn bind_locals(&mut self, p: &Pat) {
        let mut idents = Vec::new();
        collect_pattern_idents(p, &mut idents);
        for i in idents {
            self.lowerer.bind(&i.to_string(), Binding::Local);
        }
    }

    /// Visits `e` alone and returns its taint (also added to the whole's).
    fn taint_of(&mut self, e: &mut Expr) -> Option<Taint> {
        let outer = self.taint.take();
        self.visit_expr_mut(e);
        let inner = self.taint;
        self.taint = outer.or(inner);
        inner
    }

    /// The function's plain variable that `e` names, if any.
    fn plain_variable(&self, e: &Expr) -> Option<String> {
        let Expr::Path(p) = strip(e) else { return None };
        let name = p.path.get_ident()?.to_string();
        matches!(self.lowerer.lookup(&name), Some(Binding::Const { .. })).then_some(name)
    }
}

impl VisitMut for Renamer<'_, '_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        // `n as usize` of a differentiated number in constant code (a loop bound): read as a
        // number whether it is held as one or as a 0-d tensor.
        if let Expr::Cast(c) = e {
            if self.lowerer.scalar_out
                && super::expr::is_integer_type(&c.ty)
                && self.lowerer.mentions_active(&c.expr)
            {
                self.visit_expr_mut(&mut c.expr);
                let inner = &c.expr;
                *c.expr = syn::parse_quote!(::rune_ad::__private::real_of(&(#inner)));
                return;
            }
        }
        // `x.shape()`, `x.len()`, `x.gt(..)`: reading shape metadata or building a mask is not
        // reading the numbers the gradient flows through.
        if let Expr::MethodCall(mc) = e {
            let method = mc.method.to_string();
            if ops::is_metadata(&method) || ops::NONDIFF.contains(&method.as_str()) {
                if let Expr::Path(p) = strip(&mc.receiver) {
                    if let Some(ident) = p.path.get_ident().cloned() {
                        let replacement = match self.lowerer.lookup(&ident.to_string()).cloned() {
                            Some(Binding::Active(v, _)) => Some(val_ident(v)),
                            Some(Binding::List(l)) => Some(self.lowerer.lists[l.0].clone()),
                            Some(Binding::Slot(slot)) => {
                                let out = self.lowerer.new_val();
                                self.lowerer.stmts.push(Stmt::SlotRead { out, slot });
                                Some(val_ident(out))
                            }
                            _ => None,
                        };
                        if let Some(new) = replacement {
                            *mc.receiver = syn::parse_quote_spanned!(ident.span()=> #new);
                            for a in mc.args.iter_mut() {
                                self.visit_expr_mut(a);
                            }
                            return;
                        }
                    }
                }
            }
            if ops::is_metadata(&method) || ops::NONDIFF.contains(&method.as_str()) {
                // Shapes and masks of any expression: no read of the numbers.
                let outer = self.taint.take();
                self.visit_expr_mut(&mut mc.receiver);
                self.taint = outer;
                for a in mc.args.iter_mut() {
                    self.visit_expr_mut(a);
                }
                return;
            }
            // `v.push(value)` mutates `v`: a tainted argument taints it.
            let receiver = self.plain_variable(&mc.receiver);
            if ops::CONCRETIZING.contains(&method.as_str()) && !Lowerer::is_iterator(&mc.receiver) {
                // The read is the whole `x.item()`, which the error underlines.
                let whole = Taint::of(&*mc);
                let outer = self.taint.take();
                self.visit_expr_mut(&mut mc.receiver);
                self.taint = outer.or(self.taint.map(|_| whole));
            } else {
                self.visit_expr_mut(&mut mc.receiver);
            }
            for a in mc.args.iter_mut() {
                if let (Some(t), Some(name)) = (self.taint_of(a), &receiver) {
                    self.assigned.push((name.clone(), t));
                }
            }
            return;
        }
        match e {
            Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                let ident = p.path.get_ident().expect("checked").clone();
                match self.lowerer.lookup(&ident.to_string()) {
                    Some(Binding::Active(v, by_ref)) => {
                        self.taint = self.taint.or(Some(Taint::of(&ident)));
                        let new = val_ident(*v);
                        // The user's variable is a reference (`x: &Tensor<T>`); so is this.
                        *e = if *by_ref {
                            syn::parse_quote_spanned!(ident.span()=> (&#new))
                        } else {
                            syn::parse_quote_spanned!(ident.span()=> #new)
                        };
                    }
                    Some(Binding::Slot(slot)) => {
                        let slot = *slot;
                        self.taint = self.taint.or(Some(Taint::of(&ident)));
                        let out = self.lowerer.new_val();
                        self.lowerer.stmts.push(Stmt::SlotRead { out, slot });
                        let new = val_ident(out);
                        *e = syn::parse_quote_spanned!(ident.span()=> #new);
                    }
                    Some(Binding::Const { ident: new, taint }) => {
                        self.taint = self.taint.or(*taint);
                        let mut new = new.clone();
                        new.set_span(new.span().located_at(ident.span()));
                        *e = syn::parse_quote!(#new);
                    }
                    Some(Binding::List(l)) => {
                        self.taint = self.taint.or(Some(Taint::of(&ident)));
                        // An array parameter is read as the user's array, a local array of
                        // numbers as its numbers; another local list is a `Vec` of tensors
                        // either way.
                        let l = *l;
                        let mut new = match self.lowerer.array_param(l) {
                            Some(param) => param.clone(),
                            None => self.lowerer.lists[l.0].clone(),
                        };
                        new.set_span(new.span().located_at(ident.span()));
                        *e = if self.lowerer.number_lists.contains(&l) {
                            syn::parse_quote!((::rune_ad::__private::list_numbers(&#new)))
                        } else {
                            syn::parse_quote!(#new)
                        };
                    }
                    Some(Binding::Closure(index)) => {
                        let index = *index;
                        if let Lowered::Const { tokens, .. } =
                            self.lowerer.closure_value(index, &ident)
                        {
                            *e = syn::parse_quote!(#tokens);
                        }
                    }
                    Some(Binding::Iter(def)) => {
                        // Constant code reading the iterator reads its chain as written.
                        self.taint = self.taint.or(Some(Taint::of(&ident)));
                        let chain = def.chain.clone();
                        *e = syn::parse_quote!((#chain));
                        self.visit_expr_mut(e);
                    }
                    Some(Binding::Pullback(_)) => {
                        self.lowerer.errors.at(&ident, PULLBACK_USES);
                    }
                    Some(Binding::Local) | None => {}
                }
            }
            Expr::Call(c)
                if matches!(strip(&c.func), Expr::Path(p)
                    if p.path.segments.last().is_some_and(|s| s.ident == "stop_gradient")) =>
            {
                // Reading through `stop_gradient` cuts the gradient on purpose: no taint. What it
                // reads of a differentiated value is detached, so that the dual numbers `f_hvp`
                // runs on carry no tangent through it either.
                let outer = self.taint.take();
                for a in c.args.iter_mut() {
                    self.visit_expr_mut(a);
                }
                if self.taint.is_some() {
                    *c.func = syn::parse_quote_spanned!(c.func.span()=>
                        ::rune_ad::__private::detach);
                }
                self.taint = outer;
            }
            Expr::Assign(a) => {
                let target = self.plain_variable(&a.left);
                if let (Some(t), Some(name)) = (self.taint_of(&mut a.right), target) {
                    self.assigned.push((name, t));
                }
                self.visit_expr_mut(&mut a.left);
            }
            Expr::Binary(b) if is_compound_assignment(&b.op) => {
                let target = self.plain_variable(&b.left);
                if let (Some(t), Some(name)) = (self.taint_of(&mut b.right), target) {
                    self.assigned.push((name, t));
                }
                self.visit_expr_mut(&mut b.left);
            }
            Expr::Block(b) => self.scoped(|r| r.visit_block_mut(&mut b.block)),
            Expr::Closure(c) => {
                for input in c.inputs.iter_mut() {
                    self.visit_pat_mut(input);
                }
                self.scoped(|r| {
                    for input in &c.inputs {
                        r.bind_locals(input);
                    }
                    r.visit_expr_mut(&mut c.body);
                });
            }
            Expr::ForLoop(f) => {
                self.visit_expr_mut(&mut f.expr);
                self.scoped(|r| {
                    r.bind_locals(&f.pat);
                    r.visit_block_mut(&mut f.body);
                });
            }
            Expr::Try(_) if self.lowerer.fallible => syn::visit_mut::visit_expr_mut(self, e),
            Expr::Unsafe(_) | Expr::Async(_) | Expr::Try(_) | Expr::Await(_) => {
                let what = match e {
                    Expr::Unsafe(_) => "`unsafe` blocks",
                    Expr::Async(_) => "`async` blocks",
                    Expr::Try(_) => "the `?` operator",
                    _ => "`.await`",
                };
                self.lowerer.unsupported(e, what);
            }
            Expr::Macro(m) => {
                let (tokens, taint) = self.lowerer.rewrite_macro(m.mac.tokens.clone(), &m.mac);
                self.taint = self.taint.or(taint);
                m.mac.tokens = tokens;
            }
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_arm_mut(&mut self, arm: &mut syn::Arm) {
        self.scoped(|r| {
            r.bind_locals(&arm.pat);
            if let Some((_, guard)) = &mut arm.guard {
                r.visit_expr_mut(guard);
            }
            r.visit_expr_mut(&mut arm.body);
        });
    }

    fn visit_expr_let_mut(&mut self, l: &mut syn::ExprLet) {
        // `if let` / `while let`: the names bound stay as written in the branch that follows.
        self.visit_expr_mut(&mut l.expr);
        self.bind_locals(&l.pat);
    }

    fn visit_expr_if_mut(&mut self, i: &mut syn::ExprIf) {
        self.scoped(|r| {
            r.visit_expr_mut(&mut i.cond);
            r.visit_block_mut(&mut i.then_branch);
        });
        if let Some((_, els)) = &mut i.else_branch {
            self.visit_expr_mut(els);
        }
    }

    fn visit_expr_while_mut(&mut self, w: &mut syn::ExprWhile) {
        self.scoped(|r| {
            r.visit_expr_mut(&mut w.cond);
            r.visit_block_mut(&mut w.body);
        });
    }

    fn visit_block_mut(&mut self, b: &mut Block) {
        self.scoped(|r| {
            for s in b.stmts.iter_mut() {
                r.visit_stmt_mut(s);
            }
        });
    }

    fn visit_pat_mut(&mut self, _: &mut Pat) {
        // Patterns bind names (see `bind_locals`); they read none of the function's.
    }

    fn visit_field_value_mut(&mut self, f: &mut syn::FieldValue) {
        if f.colon_token.is_none() {
            f.colon_token = Some(Default::default());
        }
        syn::visit_mut::visit_field_value_mut(self, f);
    }

    fn visit_local_mut(&mut self, local: &mut Local) {
        // The initialiser reads the enclosing names; the pattern's names are visible after it.
        if let Some(init) = &mut local.init {
            self.visit_expr_mut(&mut init.expr);
            if let Some((_, diverge)) = &mut init.diverge {
                self.visit_expr_mut(diverge);
            }
        }
        self.bind_locals(&local.pat);
    }

    fn visit_stmt_macro_mut(&mut self, m: &mut syn::StmtMacro) {
        let tokens = self
            .lowerer
            .rewrite_macro_tokens(m.mac.tokens.clone(), &m.mac);
        m.mac.tokens = tokens;
    }
}

/// Macros that print or check values: they may read differentiated tensors (in the forward
/// pass only; they have no effect on gradients).
const READING_MACROS: &[&str] = &[
    "println",
    "print",
    "eprintln",
    "eprint",
    "format",
    "write",
    "writeln",
    "panic",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "dbg",
];

/// Renames the names a pattern binds to their generated constants.
pub(super) fn rename_pattern(p: &mut Pat, l: &Lowerer) {
    struct Renamer<'l, 'e>(&'l Lowerer<'e>);
    impl VisitMut for Renamer<'_, '_> {
        fn visit_pat_ident_mut(&mut self, p: &mut syn::PatIdent) {
            if let Some(Binding::Const { ident, .. }) = self.0.lookup(&p.ident.to_string()) {
                let mut new = ident.clone();
                new.set_span(new.span().located_at(p.ident.span()));
                p.ident = new;
            }
            syn::visit_mut::visit_pat_ident_mut(self, p);
        }
    }
    Renamer(l).visit_pat_mut(p);
}
