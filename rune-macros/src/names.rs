//! Every identifier the generated code introduces, in one place: `__rune_` and a name, with
//! mixed-site hygiene (labels too begin `'__rune_`), so none clashes with the user's names.
//! `emit::tokens::gather_lets` relies on the prefix.

use proc_macro2::Span;
use syn::Ident;

use crate::ids::{Const, List, Slot, Val};

/// The prefix of every generated identifier.
const PREFIX: &str = "__rune_";

/// A fresh identifier that cannot clash with the user's.
pub fn hidden(name: &str) -> Ident {
    Ident::new(&format!("{PREFIX}{name}"), Span::mixed_site())
}

/// Whether `ident` is one of the generated identifiers.
pub fn is_hidden(ident: &Ident) -> bool {
    ident.to_string().starts_with(PREFIX)
}

/// The number `n` of a generated identifier `__rune_<kind><n>`.
fn numbered(ident: &Ident, kind: &str) -> Option<usize> {
    ident
        .to_string()
        .strip_prefix(PREFIX)?
        .strip_prefix(kind)?
        .parse()
        .ok()
}

/// The value an identifier made by [`val_ident`] holds.
pub fn val_of(ident: &Ident) -> Option<Val> {
    numbered(ident, "v").map(Val)
}

/// The constant an identifier made by [`const_ident`] holds.
pub fn const_of(ident: &Ident) -> Option<Const> {
    numbered(ident, "c").map(Const)
}

/// The local a tuple method's receiver is bound to (`let (q, r) = a.qr();`), with the span of
/// the user's call.
pub fn tuple_receiver(span: Span) -> Ident {
    Ident::new(&format!("{PREFIX}tuple_receiver"), span)
}

/// The parameter of a generated forward-mode function that takes the tangent of parameter
/// `index`. Written at the call site: it appears in the entry points' signatures.
pub fn tangent_param(index: usize) -> Ident {
    quote::format_ident!("{PREFIX}tangent_{index}")
}

/// The fn item of a fused region (`kind`: `v7`, `d7_0`): `__rune_v7`, `__rune_dual_v7` in a
/// dual-number twin. Beside a free function it is an associated function of the function's
/// type; a method's are written inside each pass, so no method's name is needed.
pub fn region_item(twin: bool, kind: &str) -> String {
    let twin = if twin { "dual_" } else { "" };
    format!("{PREFIX}{twin}{kind}")
}

/// The local holding a differentiated value.
pub fn val_ident(v: Val) -> Ident {
    hidden(&format!("v{}", v.0))
}

/// The local holding hoisted constant `c`.
pub fn const_ident(c: Const) -> Ident {
    hidden(&format!("c{}", c.0))
}

pub fn residual_ident(c: Const) -> Ident {
    hidden(&format!("r{}", c.0))
}

pub fn config_ident(c: Const) -> Ident {
    hidden(&format!("k{}", c.0))
}

pub fn shape_ident(v: Val) -> Ident {
    hidden(&format!("s{}", v.0))
}

pub fn adjoint_ident(v: Val) -> Ident {
    hidden(&format!("a{}", v.0))
}

pub fn tangent_ident(v: Val) -> Ident {
    hidden(&format!("t{}", v.0))
}

pub fn pullback_ident(v: Val) -> Ident {
    hidden(&format!("pb{}", v.0))
}

/// The partial derivatives that a reduced fused region with result `v` saves.
pub fn partials_ident(v: Val) -> Ident {
    hidden(&format!("p{}", v.0))
}

pub fn sizes_ident(v: Val) -> Ident {
    hidden(&format!("z{}", v.0))
}

pub fn witness_ident(v: Val) -> Ident {
    hidden(&format!("w{}", v.0))
}

pub fn template_ident(root: usize) -> Ident {
    hidden(&format!("template{root}"))
}

pub fn struct_grad_ident(root: usize) -> Ident {
    hidden(&format!("grad{root}"))
}

pub fn struct_tangent_ident(root: usize) -> Ident {
    hidden(&format!("tangent{root}"))
}

pub fn list_adjoint_ident(l: List) -> Ident {
    hidden(&format!("al{}", l.0))
}

/// The length of array or list parameter `l`, which its gradient has too.
pub fn list_len_ident(l: List) -> Ident {
    hidden(&format!("len{}", l.0))
}

pub fn list_tangent_ident(l: List) -> Ident {
    hidden(&format!("tl{}", l.0))
}

pub fn slot_ident(s: Slot) -> Ident {
    hidden(&format!("m{}", s.0))
}

pub fn slot_tangent_ident(s: Slot) -> Ident {
    hidden(&format!("tm{}", s.0))
}

pub fn slot_adjoint_ident(s: Slot) -> Ident {
    hidden(&format!("am{}", s.0))
}

pub fn trips_ident(id: usize) -> Ident {
    hidden(&format!("trips{id}"))
}

pub fn trips_stack_ident(id: usize) -> Ident {
    hidden(&format!("trips{id}_stack"))
}

pub fn arm_ident(id: usize) -> Ident {
    hidden(&format!("arm{id}"))
}

pub fn arm_stack_ident(id: usize) -> Ident {
    hidden(&format!("arm{id}_stack"))
}

pub fn reached_ident(id: usize) -> Ident {
    hidden(&format!("reached{id}"))
}

pub fn reached_stack_ident(id: usize) -> Ident {
    hidden(&format!("reached{id}_stack"))
}

pub fn stages_label(id: usize) -> syn::Lifetime {
    syn::Lifetime::new(&format!("'__rune_stages{id}"), Span::call_site())
}
