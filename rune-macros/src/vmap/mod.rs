//! `#[differentiable(vmap)]`: the batched twin of a function and its batched entry points.
//!
//! The twin `__vmap_f` is the function's body rewritten (in [`body`]) so that each tensor value
//! may carry a leading batch axis: beside every tensor variable `x` goes a `bool`
//! `__vmap_b_x` saying whether it does, and each op becomes ordinary ops of the op table whose
//! configuration `rune_runtime::vmap` computes from those flags, as the op's batching rule in
//! the registry (`rune_ops::Batching`) says. The twin takes the flags and the batch length as
//! `#[nodiff]` parameters and is itself `#[differentiable]`, so its derivatives are derived as
//! any function's are. The entry points written here ([`entry`]) unpack `Batch` arguments and
//! call the twin or its derivatives: `f_grad_vmap` is the twin's pullback with every
//! differentiated argument batched (each example then has its own copy, whose gradient is that
//! example's), which is `jax.vmap(jax.grad(f))`.

mod body;
mod calls;
mod entry;
mod rules;

pub use calls::batched_calls;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{FnArg, ItemFn, Pat};

use crate::diag::Errors;
use crate::parse::{tensor_elem, Returns, Signature};

/// A parameter of the function, as the batched functions see it.
#[derive(Clone)]
pub(crate) struct VmapParam {
    pub ident: syn::Ident,
    /// The declared type.
    pub ty: syn::Type,
    /// `Tensor<E>` for a tensor parameter, or the structure's type for a differentiated
    /// structure (both batchable), `None` for a constant passed as it is.
    pub tensor: Option<syn::Type>,
    /// A differentiated structure (`#[derive(Differentiable)]`), batched on every leaf.
    pub structure: bool,
    /// `self`: shared by every example in the entry points.
    pub receiver: bool,
    /// Declared by reference (`&Tensor<E>`).
    pub borrowed: bool,
    /// Differentiated.
    pub active: bool,
}

/// The flag variable of tensor variable `name`.
pub(crate) fn flag(name: &syn::Ident) -> syn::Ident {
    format_ident!("__vmap_b_{}", name)
}

/// The batched twin and the batched entry points of `original` (as written, attributes
/// included), or the errors saying why the function cannot be batched.
///
/// `hvp`: whether `f_hvp` exists, `Some(true)` under the `hvp` option (which the twins then
/// take too), `Some(false)` for a function generic over its element type; with it, a free
/// function of tensors returning one gets `f_hvp_vmap`.
pub fn vmap_items(
    original: &ItemFn,
    sig: &Signature,
    hvp: Option<bool>,
    errors: &mut Errors,
) -> TokenStream {
    let before = errors.len();
    let Some((params, outputs)) = vmap_params(original, sig, errors) else {
        return TokenStream::new();
    };
    let batched = body::batched_body(original, &params, outputs.is_some(), errors);
    if errors.len() > before {
        return TokenStream::new();
    }
    let option = (hvp == Some(true)).then(|| quote!((hvp)));
    let twin = twin_fn(original, &params, batched);
    let mut entries = entry::entry_points(original, &params, outputs.as_deref());
    entries.extend(entry::self_batched_entry_points(
        original,
        &params,
        outputs.as_deref(),
    ));
    let plain = sig
        .active()
        .all(|(_, a)| !a.structure && !a.array && !a.scalar);
    let free = params.iter().all(|p| !p.receiver);
    if hvp.is_some() && plain && free && outputs.is_none() && !sig.scalar_out {
        entries.extend(entry::hvp_entry(original, &params, option.clone()));
    }
    let name = &original.sig.ident;
    // A free function's hidden type (`emit::place`) marks it batched for its callers.
    let marker = params
        .iter()
        .all(|p| !p.receiver)
        .then(|| quote!(impl ::rune_ad::__private::Batched for #name {}));
    quote! {
        #[::rune_ad::differentiable #option]
        #twin
        #entries
        #marker
    }
}

/// For a method declared in a trait under `#[differentiable(vmap)]`: the declaration of its
/// batched twin `__vmap_f` (which each impl's method under the attribute writes, see
/// [`impl_twin`]), and the batched entry points as provided methods calling the twin and its
/// derivatives (`where Self: Sized`, as the other generated methods, which keeps the trait
/// dyn-compatible). Returns the twin's declaration as a function (without a body), whose
/// entry points the caller declares as any method's, and the provided methods.
pub fn trait_items(
    decl: &ItemFn,
    sig: &Signature,
    errors: &mut Errors,
) -> Option<(ItemFn, TokenStream)> {
    let before = errors.len();
    let (params, outputs) = vmap_params(decl, sig, errors)?;
    if errors.len() > before {
        return None;
    }
    let mut sized = decl.clone();
    let predicates = &mut sized.sig.generics.make_where_clause().predicates;
    predicates.push(syn::parse_quote!(Self: ::core::marker::Sized));
    if params.iter().any(|p| p.receiver && p.active) {
        predicates.push(syn::parse_quote!(Self: ::rune_ad::__private::Differentiable));
    }
    let entries = entry::entry_points(&sized, &params, outputs.as_deref());
    let twin = twin_fn(decl, &params, quote!());
    Some((syn::parse2(twin).expect("a twin parses"), entries))
}

/// For a method of a trait impl under `#[differentiable(vmap)]`: its batched twin `__vmap_f`,
/// which the trait declares ([`trait_items`]) and the caller differentiates as a method of the
/// impl; the batched entry points are the trait's.
pub fn impl_twin(original: &ItemFn, sig: &Signature, errors: &mut Errors) -> Option<ItemFn> {
    let before = errors.len();
    let (params, outputs) = vmap_params(original, sig, errors)?;
    let batched = body::batched_body(original, &params, outputs.is_some(), errors);
    if errors.len() > before {
        return None;
    }
    Some(syn::parse2(twin_fn(original, &params, batched)).expect("a twin parses"))
}

/// The parameters as the batched functions see them, and the tensors of a function returning
/// a tuple; `None` (with the errors reported) for a function `vmap` cannot batch.
fn vmap_params(
    original: &ItemFn,
    sig: &Signature,
    errors: &mut Errors,
) -> Option<(Vec<VmapParam>, Option<Vec<syn::Type>>)> {
    let before = errors.len();
    if sig.fallible.is_some() || sig.scalar_out || sig.array_out.is_some() {
        errors.at(
            &original.sig.output,
            "`vmap` batches functions returning a tensor or a tuple of them; this one returns \
             another type",
        );
    }
    let outputs = match &sig.returns {
        Returns::Single(_) => None,
        Returns::Tuple(types) => Some(types.clone()),
        Returns::Aux { .. } => {
            errors.at(
                &original.sig.output,
                "`vmap` batches functions returning tensors, not `has_aux` pairs yet",
            );
            None
        }
    };
    let mut params = Vec::new();
    for (input, p) in original.sig.inputs.iter().zip(&sig.params) {
        let receiver = match input {
            FnArg::Receiver(r) if r.reference.is_some() && r.mutability.is_none() => true,
            FnArg::Receiver(r) => {
                errors.at(r, "`vmap` batches methods taking `&self`");
                continue;
            }
            FnArg::Typed(typed) => {
                if !matches!(&*typed.pat, Pat::Ident(_)) {
                    errors.at(
                        &typed.pat,
                        "`vmap` takes parameters named by one identifier",
                    );
                }
                false
            }
        };
        let (inner, borrowed) = match &p.ty {
            syn::Type::Reference(r) => ((*r.elem).clone(), true),
            other => (other.clone(), false),
        };
        let list = matches!(inner, syn::Type::Slice(_) | syn::Type::Array(_)) || is_vec(&inner);
        if p.active.is_some() && list {
            errors.at(
                &p.ty,
                "`vmap` batches tensors and structures of them; a list parameter cannot be \
                 batched yet (hold the tensors in a `#[derive(Differentiable)]` structure with a \
                 `Vec` field, whose layers a batched body loops over)",
            );
            continue;
        }
        let structure = p.active.as_ref().is_some_and(|a| a.structure);
        let tensor = (tensor_elem(&inner).is_some() || structure).then(|| inner.clone());
        let active = p.active.is_some();
        if active && tensor.is_none() {
            errors.at(
                &p.ty,
                "`vmap` batches tensors and structures of them; a differentiated number or \
                 list cannot be batched yet (pass its tensors as parameters)",
            );
        }
        params.push(VmapParam {
            ident: p.ident.clone(),
            ty: p.ty.clone(),
            tensor,
            structure,
            receiver,
            borrowed,
            active,
        });
    }
    (errors.len() == before).then_some((params, outputs))
}

/// Whether `ty` is a `Vec<..>`.
fn is_vec(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p)
        if p.path.segments.last().is_some_and(|s| s.ident == "Vec"))
}

/// `__vmap_f`: the function with the flags and the batch length added as `#[nodiff]`
/// parameters and its body batched (without the `#[differentiable]` it is given).
fn twin_fn(original: &ItemFn, params: &[VmapParam], body: TokenStream) -> TokenStream {
    let mut sig = original.sig.clone();
    sig.ident = format_ident!("__vmap_{}", original.sig.ident);
    // A flag for every parameter, so that a caller passes one per argument without knowing
    // which are tensors (a constant's is never read).
    for p in params {
        let f = flag(&p.ident);
        sig.inputs.push(syn::parse_quote!(#[nodiff] #f: bool));
    }
    sig.inputs
        .push(syn::parse_quote!(#[nodiff] __vmap_n: usize));
    let vis = &original.vis;
    quote! {
        #[doc(hidden)]
        #[allow(clippy::all, unused_parens)]
        #vis #sig {
            #body
        }
    }
}
