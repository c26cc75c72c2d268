//! The fields of `#[nodiff] &self` in the dual twin of a method on a concrete type: each field
//! the body reads (`self.rest`) is bound once at the top of the twin through the runtime's
//! `twin_field!`, which lifts a tensor (or a list of tensors) to dual numbers and leaves
//! anything else as it is, and the body reads the binding (`(*__rune_self_rest)`). Without it
//! a tensor field of real numbers would meet the twin's dual numbers, a type error.

use proc_macro2::Span;
use quote::format_ident;
use syn::visit_mut::VisitMut;
use syn::{Expr, FnArg, ItemFn, Member};

/// Rewrites `self.f` in `twin`'s body to a binding of the field made at its top, where `self`
/// is taken by shared reference.
pub(super) fn bind_self_fields(twin: &mut ItemFn) {
    let by_reference = twin.sig.inputs.iter().any(
        |a| matches!(a, FnArg::Receiver(r) if r.reference.is_some() && r.mutability.is_none()),
    );
    if !by_reference {
        return;
    }
    let mut fields = SelfFields::default();
    fields.visit_block_mut(&mut twin.block);
    let binds = fields.read.iter().map(|member| {
        let name = binding(member);
        syn::parse_quote! {
            let #name = ::rune_ad::__private::twin_field!(self.#member);
        }
    });
    let binds: Vec<syn::Stmt> = binds.collect();
    twin.block.stmts.splice(0..0, binds);
}

/// The binding of field `member`.
fn binding(member: &Member) -> syn::Ident {
    match member {
        Member::Named(name) => format_ident!("__rune_self_{}", name),
        Member::Unnamed(index) => {
            format_ident!("__rune_self_{}", index.index, span = Span::call_site())
        }
    }
}

/// The fields of `self` the body reads, in the order first read.
#[derive(Default)]
struct SelfFields {
    read: Vec<Member>,
}

impl VisitMut for SelfFields {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Field(field) = e {
            if matches!(&*field.base, Expr::Path(p) if p.qself.is_none() && p.path.is_ident("self"))
            {
                if !self.read.contains(&field.member) {
                    self.read.push(field.member.clone());
                }
                let name = binding(&field.member);
                *e = syn::parse_quote!((*#name));
                return;
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }

    /// An item declared in the body (a nested `fn` or `impl`) has a `self` of its own.
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}
