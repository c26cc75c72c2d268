//! `flat_map` (and `flatten`) over differentiated values, written as the nested iteration it
//! stands for: `for y in xs.iter().flat_map(|x| f(x)) { body }` is a `for` loop over `xs` whose
//! body loops over `f(x)`, and a `fold` (`sum`, `product`) of it a `fold` over `xs` whose step
//! folds each inner sequence. A `break` in the body leaves both loops (the inner one carries a
//! hidden label, `JOINED`, that `lower_loop` reads), `continue` goes on to the next inner
//! element. After the `flat_map` only `map` may follow: the positions of the flattened
//! sequence are not known before it is walked.

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::{Block, Expr, Pat};

use super::syntax::strip;
use super::{Binding, Lowered, Lowerer};
use crate::ir::List;

/// An iterator chain bound with `let`: the chain, and the names it reads with the count of
/// bindings when each was bound (`Lowerer::generations`), to tell a name bound again before
/// the iterator is walked (`let it = xs.iter(); let xs = ..; for x in it`).
#[derive(Clone)]
pub(super) struct IterDef {
    pub(super) chain: Expr,
    names: Vec<(String, Option<usize>)>,
}

/// The identifiers in `tokens`.
fn idents(tokens: TokenStream, out: &mut Vec<String>) {
    for t in tokens {
        match t {
            proc_macro2::TokenTree::Ident(i) => out.push(i.to_string()),
            proc_macro2::TokenTree::Group(g) => idents(g.stream(), out),
            _ => {}
        }
    }
}

/// A flattened chain refused, its error reported.
pub(super) struct Refused;

/// The label of the inner loop of a flattened `for` loop.
pub(super) const JOINED: &str = "__rune_flat_map";

/// An iterator chain split at its `flat_map`: `outer.flat_map(|pat| inner).map(m)..`.
pub(super) struct Flat {
    outer: Expr,
    pat: Pat,
    inner: Expr,
    maps: Vec<Expr>,
    /// The flattened elements are numbered (`.enumerate()` last, in a `for` loop).
    enumerated: Option<Span>,
}

impl Flat {
    /// The inner sequence with the `map`s after the `flat_map` applied.
    fn inner_chain(&self) -> TokenStream {
        let (inner, maps) = (&self.inner, &self.maps);
        quote!((#inner) #(.map(#maps))*)
    }
}

/// Whether `e` is an iterator chain with a `flat_map` or `flatten` in it.
fn flattens(e: &Expr) -> bool {
    match strip(e) {
        Expr::MethodCall(mc) => {
            matches!(mc.method.to_string().as_str(), "flat_map" | "flatten")
                || flattens(&mc.receiver)
        }
        _ => false,
    }
}

/// What an iterator over differentiated values bound with `let` supports.
pub(super) const ITER_USES: &str = "an iterator over differentiated values bound with `let` is \
    read where it is walked: a `for` loop over it, or adaptors and `fold`, `sum`, `product`, \
    `collect` or `.last().unwrap()`-style reads called on it";

impl Lowerer<'_> {
    /// `let name = chain;` of an iterator chain over differentiated values: `name` stands for
    /// the chain where it is walked. Returns whether it was bound so.
    pub(super) fn bind_iter(&mut self, name: &syn::Ident, init: &Expr) -> bool {
        let names_itself = init
            .to_token_stream()
            .into_iter()
            .any(|t| matches!(&t, proc_macro2::TokenTree::Ident(i) if i == name));
        if names_itself || !Self::is_iterator(init) || !self.mentions_active(init) {
            return false;
        }
        let chain = self.inline_iter(init).unwrap_or_else(|| init.clone());
        let mut names = Vec::new();
        idents(chain.to_token_stream(), &mut names);
        names.sort();
        names.dedup();
        let names = names
            .into_iter()
            .map(|n| {
                let generation = self.generations.get(&n).copied();
                (n, generation)
            })
            .collect();
        self.bind(
            &name.to_string(),
            Binding::Iter(Box::new(IterDef { chain, names })),
        );
        true
    }

    /// `e` with the iterator bound with `let` at the base of its chain written out, if it has
    /// one (`layers.zip(on)` for `let layers = a.iter().chain(&b);`).
    pub(super) fn inline_iter(&mut self, e: &Expr) -> Option<Expr> {
        match strip(e) {
            Expr::MethodCall(mc) => {
                let receiver = self.inline_iter(&mc.receiver)?;
                let mut mc = mc.clone();
                *mc.receiver = receiver;
                Some(Expr::MethodCall(mc))
            }
            Expr::Path(p) => {
                let ident = p.path.get_ident()?;
                let Some(Binding::Iter(def)) = self.lookup(&ident.to_string()).cloned() else {
                    return None;
                };
                let rebound = def
                    .names
                    .iter()
                    .find(|(n, generation)| self.generations.get(n).copied() != *generation);
                if let Some((name, _)) = rebound {
                    self.errors.at(
                        ident,
                        format!(
                            "`{ident}` reads `{name}`, which is bound again since `{ident}` was \
                             made: walk the iterator before that, or make it again after"
                        ),
                    );
                }
                let chain = &def.chain;
                Some(syn::parse_quote!((#chain)))
            }
            _ => None,
        }
    }

    /// `e` split at its `flat_map`, when it has one; `Err` (reported) when an adaptor other
    /// than `map` follows it.
    pub(super) fn flat(&mut self, e: &Expr) -> Option<Result<Flat, Refused>> {
        if let Some(inlined) = self.inline_iter(e) {
            return self.flat(&inlined);
        }
        if !flattens(e) {
            return None;
        }
        let mut maps = Vec::new();
        let mut current = strip(e);
        let mut enumerated = None;
        if let Expr::MethodCall(mc) = current {
            if mc.method == "enumerate" && mc.args.is_empty() {
                enumerated = Some(mc.method.span());
                current = strip(&mc.receiver);
            }
        }
        let mut flat = loop {
            let Expr::MethodCall(mc) = current else {
                return None;
            };
            let method = mc.method.to_string();
            match (method.as_str(), mc.args.len()) {
                ("map", 1) => {
                    maps.push(mc.args[0].clone());
                    current = strip(&mc.receiver);
                }
                ("flat_map", 1) => {
                    maps.reverse();
                    break self.split(&mc.receiver, &mc.args[0], maps);
                }
                ("flatten", 0) => {
                    maps.reverse();
                    // `outer.map(f).flatten()` is `outer.flat_map(f)`; `outer.flatten()`
                    // walks each element as a sequence.
                    if let Expr::MethodCall(m) = strip(&mc.receiver) {
                        if m.method == "map" && m.args.len() == 1 {
                            break self.split(&m.receiver, &m.args[0], maps);
                        }
                    }
                    let f: Expr = syn::parse_quote!(|__rune_inner| __rune_inner);
                    break self.split(&mc.receiver, &f, maps);
                }
                _ => {
                    self.errors.at(
                        &mc.method,
                        format!(
                            "`{method}` after `flat_map` or `flatten` over differentiated values \
                             is not supported: only `map` may follow, then a `for` loop, \
                             `fold`, `sum`, `product` or `collect`; write nested loops for more"
                        ),
                    );
                    return Some(Err(Refused));
                }
            }
        };
        flat.enumerated = enumerated;
        Some(Ok(flat))
    }

    fn split(&mut self, outer: &Expr, f: &Expr, maps: Vec<Expr>) -> Flat {
        let (pat, inner) = match strip(f) {
            Expr::Closure(c) if c.inputs.len() == 1 => (c.inputs[0].clone(), (*c.body).clone()),
            other => (
                syn::parse_quote!(__rune_outer),
                syn::parse_quote!((#other)(__rune_outer)),
            ),
        };
        Flat {
            outer: outer.clone(),
            pat,
            inner,
            maps,
            enumerated: None,
        }
    }

    /// `for pat in flat { body }` as nested loops.
    pub(super) fn flat_for(&mut self, flat: &Flat, pat: &Pat, body: &Block) {
        let (outer, outer_pat) = (&flat.outer, &flat.pat);
        let inner = flat.inner_chain();
        let label = syn::Lifetime::new(&format!("'{JOINED}"), Span::call_site());
        let nested: Expr = match flat.enumerated {
            None => syn::parse_quote! {
                for #outer_pat in #outer {
                    #label: for #pat in #inner #body
                }
            },
            // The count goes up before the body, which may `continue`.
            Some(_) => syn::parse_quote! {{
                let mut __rune_count = 0usize;
                for #outer_pat in #outer {
                    #label: for __rune_element in #inner {
                        let #pat = (__rune_count, __rune_element);
                        __rune_count += 1;
                        #body
                    }
                }
            }},
        };
        self.control(&nested);
    }

    /// An error at a numbered flattened sequence outside a `for` loop; whether there was one.
    fn numbered(&mut self, flat: &Flat) -> bool {
        if let Some(span) = flat.enumerated {
            self.errors.at(
                quote::quote_spanned!(span=> enumerate),
                "`enumerate` after `flat_map` or `flatten` is supported in a `for` loop; here, \
                 write the loop",
            );
        }
        flat.enumerated.is_some()
    }

    /// `flat.fold(init, f)`: a fold over the outer sequence whose step folds each inner one.
    pub(super) fn flat_fold(&mut self, flat: &Flat, init: TokenStream, f: TokenStream) -> Lowered {
        if self.numbered(flat) {
            return Lowered::constant(quote!(::core::unreachable!()));
        }
        let (outer, outer_pat) = (&flat.outer, &flat.pat);
        let inner = flat.inner_chain();
        let nested: Expr = syn::parse_quote! {
            (#outer).fold(#init, |__rune_acc, #outer_pat| #inner.fold(__rune_acc, #f))
        };
        self.expr(&nested)
    }

    /// `flat.collect::<Vec<_>>()` into a new list.
    pub(super) fn flat_collect(&mut self, flat: &Flat, list: List) {
        if self.numbered(flat) {
            return;
        }
        self.scopes.push(std::collections::HashMap::new());
        self.bind("__rune_collected", Binding::List(list));
        let (outer, outer_pat) = (&flat.outer, &flat.pat);
        let inner = flat.inner_chain();
        let nested: Expr = syn::parse_quote! {
            for #outer_pat in #outer {
                for __rune_element in #inner {
                    __rune_collected.push(__rune_element);
                }
            }
        };
        self.control(&nested);
        self.scopes.pop();
    }
}
