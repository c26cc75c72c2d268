//! One element of a sequence of differentiated values, read by a method that returns an
//! `Option` and unwrapped: `outs.last().unwrap()`, `xs.iter().nth(2).unwrap()`,
//! `layers.iter().zip(&costs).min_by(|a, b| ..).expect("..")`, `xs.iter().find(..).unwrap()`.
//!
//! The position is a constant, computed where the element is read: from the sequence's length
//! (`first`, `last`, `next`, `nth`), or by running the chain as written on the values
//! (`find`, `min_by`, `max_by` and the `_by_key` forms, `rune_runtime::sequence`), so the
//! derivative follows the element chosen. The chain's element at that position is then read
//! as a loop over the chain reads each of its elements.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::{Expr, ExprMethodCall};

use crate::ir::Use;
use crate::names::const_ident;

use super::iter::Item;
use super::syntax::strip;
use super::{Lowered, Lowerer};

/// Methods of a sequence or an iterator that return one of its elements as an `Option`.
pub(super) const SELECTORS: &[&str] = &[
    "first",
    "last",
    "next",
    "nth",
    "find",
    "min_by",
    "max_by",
    "min_by_key",
    "max_by_key",
];

impl Lowerer<'_> {
    /// The element `e` reads, when it unwraps (`.unwrap()`, `.expect(..)`) a selector of a
    /// sequence of differentiated values.
    pub(super) fn selection(&mut self, e: &Expr) -> Option<Item> {
        let Expr::MethodCall(unwrap) = strip(e) else {
            return None;
        };
        let message = match (unwrap.method.to_string().as_str(), unwrap.args.len()) {
            ("unwrap", 0) => None,
            ("expect", 1) => Some(&unwrap.args[0]),
            _ => return None,
        };
        let Expr::MethodCall(select) = strip(&unwrap.receiver) else {
            return None;
        };
        let method = select.method.to_string();
        if !SELECTORS.contains(&method.as_str()) {
            return None;
        }
        // `xs.first()` and `xs.last()` of a sequence itself, the rest of an iterator.
        let on_sequence = matches!(method.as_str(), "first" | "last");
        if !on_sequence && !Self::is_iterator(&select.receiver) {
            return None;
        }
        let chain = self.chain(&select.receiver)?;
        let position = self.selected_position(select, chain.count)?;
        let unwrapped = match message {
            None => quote_spanned!(unwrap.method.span()=> #position.unwrap()),
            Some(m) => {
                let m = self.rewrite(m);
                let m = self.const_tokens(&m);
                quote_spanned!(unwrap.method.span()=> #position.expect(#m))
            }
        };
        let at = self.hoist(unwrapped, Some(quote!(usize)), Use::Plain);
        Some(self.chain_item_at(&chain, at))
    }

    /// The position a selector picks in a chain of `count` elements, an `Option<usize>`.
    fn selected_position(
        &mut self,
        select: &ExprMethodCall,
        count: crate::ir::Const,
    ) -> Option<TokenStream> {
        let n = const_ident(count);
        let method = select.method.to_string();
        Some(match (method.as_str(), select.args.first()) {
            ("first" | "next", None) => quote!((#n > 0).then_some(0usize)),
            ("last", None) => quote!(#n.checked_sub(1)),
            ("nth", Some(i)) => match self.expr(i) {
                Lowered::Const { tokens, .. } => {
                    quote!({ let i: usize = #tokens; (i < #n).then_some(i) })
                }
                Lowered::Val(_) => {
                    self.errors
                        .at(i, "the argument of `nth` must be a constant");
                    return None;
                }
            },
            (by, Some(f)) => {
                let function = match by {
                    "find" => quote!(find_position),
                    "min_by" => quote!(min_position_by),
                    "max_by" => quote!(max_position_by),
                    "min_by_key" => quote!(min_position_by_key),
                    "max_by_key" => quote!(max_position_by_key),
                    _ => return None,
                };
                let receiver = self.rewrite(&select.receiver);
                let receiver = self.const_tokens(&receiver);
                let f = self.rewrite(f);
                let f = self.const_tokens(&f);
                quote!(::rune_ad::__private::#function(
                    ::core::iter::IntoIterator::into_iter(#receiver),
                    #f
                ))
            }
            _ => return None,
        })
    }

    /// `e` read where one value is expected: an unwrapped selector's element, which must be a
    /// value (not a tuple or a window).
    pub(super) fn selected_value(&mut self, e: &Expr) -> Option<Lowered> {
        match self.selection(e)? {
            Item::Value(l, _) => Some(l),
            Item::Tuple(_) | Item::List(_) => {
                self.errors.at(
                    e,
                    "this element is a tuple or a window: bind it with `let` to a pattern \
                     (`let (i, x) = ..;`), or `map` it to one value first",
                );
                Some(Lowered::constant(quote!(::core::unreachable!())))
            }
        }
    }
}
