//! The statements that steer a batched body: assignments, loops (over constants, and over the
//! parts of a structure, each batched with it), branches on constants and the blocks and
//! branches that yield values.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use std::collections::HashMap;
use syn::{Expr, Pat, Stmt};

use super::{compound, Batcher};
use crate::vmap::flag;

/// What a loop over parts of a structure yields.
enum Parts {
    /// A part, batched when the structure (this flag) is.
    Part(TokenStream),
    /// `(position, part)`.
    Enumerate(Box<Parts>),
    /// A pair.
    Zip(Box<Parts>, Box<Parts>),
}

impl Batcher<'_> {
    /// An expression in statement position (`x = ..;`, a loop, a branch).
    pub(super) fn stmt_expr(&mut self, e: &Expr) -> TokenStream {
        match e {
            Expr::Assign(a) => {
                let (tokens, f) = self.expr(&a.right);
                self.assign(&a.left, tokens, f)
            }
            Expr::Binary(b) if compound(&b.op).is_some() => {
                let op = compound(&b.op).expect("a compound assignment");
                let (tokens, f) = self.elementwise_operator(&b.left, op, &b.right);
                self.assign(&b.left, tokens, f)
            }
            Expr::ForLoop(l) => {
                let (attrs, label, pat) = (&l.attrs, &l.label, &l.pat);
                if let Some(parts) = self.parts(&l.expr) {
                    return self.loop_over_parts(l, &parts);
                }
                let cond = self.condition(&l.expr);
                let body = self.block(&l.body.stmts, false);
                quote!(#(#attrs)* #label for #pat in #cond { #body })
            }
            Expr::While(w) => {
                let cond = self.condition(&w.cond);
                let (attrs, label) = (&w.attrs, &w.label);
                let body = self.block(&w.body.stmts, false);
                quote!(#(#attrs)* #label while #cond { #body })
            }
            Expr::Loop(l) => {
                let (attrs, label) = (&l.attrs, &l.label);
                let body = self.block(&l.body.stmts, false);
                quote!(#(#attrs)* #label loop { #body })
            }
            Expr::If(i) => self.if_stmt(i),
            Expr::Block(b) if b.label.is_none() => {
                let body = self.block(&b.block.stmts, false);
                quote!({ #body })
            }
            Expr::Return(r) => match &r.expr {
                Some(value) => {
                    let out = self.output(value);
                    quote!(return { #out })
                }
                None => r.to_token_stream(),
            },
            Expr::Break(_) | Expr::Continue(_) => e.to_token_stream(),
            other => {
                let (tokens, f) = self.expr(other);
                if f.is_some() {
                    self.errors.at(
                        other,
                        "`vmap`: this tensor is computed and dropped; bind it with `let`",
                    );
                }
                tokens
            }
        }
    }

    fn if_stmt(&mut self, i: &syn::ExprIf) -> TokenStream {
        let cond = self.condition(&i.cond);
        let then = self.block(&i.then_branch.stmts, false);
        let otherwise = i.else_branch.as_ref().map(|(_, e)| match &**e {
            Expr::If(nested) => {
                let nested = self.if_stmt(nested);
                quote!(else #nested)
            }
            Expr::Block(b) => {
                let body = self.block(&b.block.stmts, false);
                quote!(else { #body })
            }
            other => {
                self.errors.at(other, "`vmap`: an `else` takes a block");
                TokenStream::new()
            }
        });
        quote!(if #cond { #then } #otherwise)
    }

    /// `if c { a } else { b }` as a value: each branch sets the flag `f` of the value it
    /// yields. Whether the value is a tensor.
    pub(super) fn if_value(&mut self, i: &syn::ExprIf, f: &syn::Ident) -> (TokenStream, bool) {
        let cond = self.condition(&i.cond);
        let (then, mut tensor) = self.value_block(&i.then_branch.stmts, f);
        let otherwise = match i.else_branch.as_ref().map(|(_, e)| &**e) {
            Some(Expr::If(nested)) => {
                let (nested, t) = self.if_value(nested, f);
                tensor |= t;
                quote!(else #nested)
            }
            Some(Expr::Block(b)) => {
                let (body, t) = self.value_block(&b.block.stmts, f);
                tensor |= t;
                quote!(else { #body })
            }
            Some(other) => {
                self.errors.at(other, "`vmap`: an `else` takes a block");
                TokenStream::new()
            }
            None => TokenStream::new(),
        };
        (quote!(if #cond { #then } #otherwise), tensor)
    }

    /// The statements of a block that yields a value, the flag `f` set to the value's. Whether
    /// the value is a tensor.
    pub(super) fn value_block(&mut self, stmts: &[Stmt], f: &syn::Ident) -> (TokenStream, bool) {
        self.tensors.push(HashMap::new());
        let mut out = TokenStream::new();
        let mut tensor = false;
        for (k, s) in stmts.iter().enumerate() {
            match s {
                Stmt::Expr(e, None) if k + 1 == stmts.len() => {
                    let (t, fl) = self.expr(e);
                    let pending = std::mem::take(&mut self.pending);
                    let set = fl.map(|fl| {
                        tensor = true;
                        quote!(#f = #fl;)
                    });
                    out.extend(quote!(#(#pending)* #set #t));
                }
                s => out.extend(self.stmt(s, false)),
            }
        }
        self.tensors.pop();
        (out, tensor)
    }

    /// A loop's range or a branch's condition: a constant, the same for every example.
    fn condition(&mut self, e: &Expr) -> TokenStream {
        let (tokens, f) = self.expr(e);
        if f.is_some() {
            self.errors.at(
                e,
                "`vmap` cannot branch or loop on a batched value: each example could go its own \
                 way. Compute both sides and choose with `where_cond(&mask, &a, &b)`",
            );
        }
        tokens
    }

    fn assign(&mut self, left: &Expr, tokens: TokenStream, f: Option<TokenStream>) -> TokenStream {
        let Expr::Path(p) = left else {
            if f.is_some() {
                self.errors
                    .at(left, "`vmap` assigns tensors to variables only");
            }
            return quote!(#left = #tokens);
        };
        let Some(ident) = p.path.get_ident() else {
            return quote!(#left = #tokens);
        };
        let was_tensor = self.is_tensor(&ident.to_string());
        match (was_tensor, f) {
            (true, f) => {
                let fl = flag(ident);
                let f = f.unwrap_or_else(|| quote!(false));
                // The new flag is computed before the assignment, from the old flags.
                let t = self.temp();
                quote!(let #t: bool = #f; #ident = #tokens; #fl = #t)
            }
            (false, None) => quote!(#ident = #tokens),
            (false, Some(_)) => {
                self.errors.at(
                    left,
                    "`vmap`: a tensor is assigned to a variable that was not a tensor; start it \
                     from a tensor (`let mut acc = Tensor::zeros(..);`)",
                );
                TokenStream::new()
            }
        }
    }

    /// Whether `e` is a structure parameter or a part of one (a layer of a model).
    pub(super) fn structure_path(&self, e: &Expr) -> bool {
        self.structure_root(e).is_some()
    }

    /// The structure parameter (or part bound by a loop) that `e` is a part of: `model` of
    /// `model.layers[i].w`.
    pub(super) fn structure_root(&self, e: &Expr) -> Option<syn::Ident> {
        let mut e = e;
        loop {
            match e {
                Expr::Field(f) => e = &f.base,
                Expr::Index(i) => e = &i.expr,
                Expr::Paren(p) => e = &p.expr,
                Expr::Reference(r) => e = &r.expr,
                Expr::Path(p) => {
                    break p
                        .path
                        .get_ident()
                        .filter(|i| self.structures.contains(&i.to_string()))
                        .cloned()
                }
                _ => break None,
            }
        }
    }

    /// What a loop over parts of a structure yields (`&model.layers`, `.iter()`, `.rev()`,
    /// `.enumerate()`, `.zip(..)` of two), or `None` for another loop.
    fn parts(&self, e: &Expr) -> Option<Parts> {
        match e {
            Expr::Paren(p) => self.parts(&p.expr),
            Expr::Reference(r) => self.parts(&r.expr),
            Expr::MethodCall(m) => match m.method.to_string().as_str() {
                "iter" | "into_iter" | "rev" | "skip" | "take" | "step_by" => {
                    self.parts(&m.receiver)
                }
                "enumerate" => Some(Parts::Enumerate(Box::new(self.parts(&m.receiver)?))),
                "zip" if m.args.len() == 1 => Some(Parts::Zip(
                    Box::new(self.parts(&m.receiver)?),
                    Box::new(self.parts(&m.args[0])?),
                )),
                _ => None,
            },
            Expr::Field(_) | Expr::Index(_) => self
                .structure_root(e)
                .map(|root| Parts::Part(flag(&root).to_token_stream())),
            _ => None,
        }
    }

    /// `for pat in parts { body }` over layers of a structure: each part bound by the pattern
    /// is batched with the structure.
    fn loop_over_parts(&mut self, l: &syn::ExprForLoop, parts: &Parts) -> TokenStream {
        self.tensors.push(HashMap::new());
        let mut bound = Vec::new();
        let mut flags = TokenStream::new();
        self.bind_parts(&l.pat, parts, &mut bound, &mut flags);
        let body = self.block(&l.body.stmts, false);
        self.tensors.pop();
        for name in bound {
            self.structures.remove(&name);
        }
        let (attrs, label, pat, expr) = (&l.attrs, &l.label, &l.pat, &l.expr);
        quote!(#(#attrs)* #label for #pat in #expr { #flags #body })
    }

    fn bind_parts(
        &mut self,
        pat: &Pat,
        parts: &Parts,
        bound: &mut Vec<String>,
        flags: &mut TokenStream,
    ) {
        match (pat, parts) {
            (Pat::Wild(_), _) => {}
            (Pat::Ident(p), Parts::Part(f)) if p.subpat.is_none() => {
                let name = p.ident.to_string();
                self.bind(&name, true);
                if self.structures.insert(name.clone()) {
                    bound.push(name);
                }
                let fl = flag(&p.ident);
                flags.extend(quote!(let #fl: bool = #f;));
            }
            (Pat::Tuple(t), Parts::Enumerate(inner)) if t.elems.len() == 2 => {
                if let Pat::Ident(i) = &t.elems[0] {
                    self.bind(&i.ident.to_string(), false);
                }
                self.bind_parts(&t.elems[1], inner, bound, flags);
            }
            (Pat::Tuple(t), Parts::Zip(a, b)) if t.elems.len() == 2 => {
                self.bind_parts(&t.elems[0], a, bound, flags);
                self.bind_parts(&t.elems[1], b, bound, flags);
            }
            (other, _) => self.errors.at(
                other,
                "`vmap` binds the parts of a structure by name in a loop over them (`for layer \
                 in &model.layers`, `for (i, layer) in model.layers.iter().enumerate()`)",
            ),
        }
    }
}
