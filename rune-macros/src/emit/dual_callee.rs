//! The rules of `g_vjp` and `g_hvp` as differentiated callees: both run on dual numbers
//! (forward over reverse), `g` itself when it is generic over its element type, its twin when
//! it is written for `f32`/`f64` under `hvp`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::{Ident, ItemFn};

use super::api::EntryPoint;
use super::nested::{borrowed, direction, no_items, ownable, owned_copies, renamed, Site};
use super::{place, rt, Host};
use crate::parse::{contains_tensor_of, contains_type, Param, Passing, Returns, Signature};

/// Which entry point [`dual_callee`] writes the rules of.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum DualCallee {
    /// `g_vjp(x, c) = (g(x), Jᵀ c)`.
    Vjp,
    /// `g_hvp(x, v) = (∇g, H v)`.
    Hvp,
}

/// The hidden entry points of `g_vjp` or `g_hvp` for a function `g` generic over its element
/// type, of tensors, with one tensor value and one differentiated parameter; `None` for
/// another.
///
/// Both take `x` and a second tensor `c` (the cotangent, the direction) and are linear in `c`:
/// `(a(x), b(x) c)`, with `b = Jᵀ` and `a = g` for `g_vjp`, `b = H` and `a = ∇g` for `g_hvp`.
/// Both rules run the entry point on dual numbers (forward over reverse): at `x + ε u` and
/// `c + ε ċ` it gives `a + ε a' u` and `b c + ε (∂(b c)/∂x u + b ċ)`. So the tangent along
/// `(u, ċ)` is one dual call, and the pullback of `(ā, b̄)` is `a'ᵀ ā + ∂(b̄ · b c)/∂x` for `x`
/// (`b ā` from a plain call, since `a'ᵀ = b`, and the second term the tangent of `b c` at
/// `x + ε b̄`), and `bᵀ b̄` for `c` (the tangent of `a` there: `a' b̄`, as `a' = bᵀ`).
pub fn dual_callee(
    func: &ItemFn,
    sig: &Signature,
    kind: DualCallee,
    hvp_twin: bool,
    site: Site,
) -> Option<TokenStream> {
    let api = site.api(func, sig, hvp_twin);
    // A function on a concrete element type runs `g_vjp` on dual numbers through its twin;
    // `g_hvp` there would need the twin's own second derivatives (dual numbers of dual numbers).
    let (elem, generic) = api.hvp_elem()?;
    // A method's twin has no `dual_fwd` of its own: generic methods only.
    if !generic && (kind == DualCallee::Hvp || site.host == Host::Impl) {
        return None;
    }
    let Returns::Single(value_ty) = &sig.returns else {
        return None;
    };
    let [(active, a)] = sig.active().collect::<Vec<_>>()[..] else {
        return None;
    };
    // A structure is seeded and split by its `DualSeed`/`DualParts`, which the derive writes
    // for a structure generic over its element type: a generic `g` only.
    let structure = a.structure && (!generic || a.entry != crate::parse::Entry::AsIs);
    if a.array || structure || a.scalar || sig.scalar_out || sig.fallible.is_some() {
        return None;
    }
    if sig.params.iter().any(|p| !ownable(p)) {
        return None;
    }
    let name = &func.sig.ident;
    let grad: syn::Type =
        syn::parse2(Signature::grad_type(active)).expect("a gradient type parses");
    let (vjp_name, second, first_ty) = match kind {
        DualCallee::Vjp => (
            format_ident!("{}_vjp", name),
            value_ty.clone(),
            value_ty.clone(),
        ),
        DualCallee::Hvp => (format_ident!("{}_hvp", name), grad.clone(), grad.clone()),
    };
    let mut params = sig.params.clone();
    // The cotangent of `g_vjp` is shaped as the value (a tensor); the direction of `g_hvp` as
    // the parameter.
    let second_is_parameter = kind == DualCallee::Hvp;
    params.push(Param {
        ident: format_ident!("__rune_second"),
        ty: syn::parse_quote!(&#second),
        mutable: false,
        active: Some(crate::parse::Active {
            passing: Passing::Borrowed,
            structure: a.structure && second_is_parameter,
            entry: match second_is_parameter {
                true => a.entry,
                false => crate::parse::Entry::AsIs,
            },
            ..a.clone()
        }),
    });
    let vjp_sig = Signature {
        params,
        returns: Returns::Tuple(vec![first_ty, grad]),
        fallible: None,
        scalar_out: false,
        array_out: None,
    };
    let vjp_func = renamed(func, &vjp_name);
    let vjp_api = site.api(&vjp_func, &vjp_sig, false);
    let plain_path = site.path(&vjp_name);
    // On dual numbers: a method of a block generic over the element, the block's type there;
    // anything else, itself at the element's dual numbers.
    let dual_path = match api.block_on_duals(&elem) {
        Some(on_duals) => quote!(<#on_duals>::#vjp_name),
        None => {
            let dual_turbofish = dual_turbofish(func, &elem);
            quote!(#plain_path #dual_turbofish)
        }
    };
    let rt = rt();
    let (_, ty_generics, _) = func.sig.generics.split_for_impl();
    let turbofish = ty_generics.as_turbofish();
    let names: Vec<&Ident> = vjp_sig.params.iter().map(|p| &p.ident).collect();
    let n = sig.params.len();
    // Each argument of the dual call: a differentiated one seeded with its direction, a
    // constant that names the element type lifted, any other passed on.
    let dual_args = |value: &dyn Fn(usize) -> TokenStream,
                     other: &dyn Fn(usize) -> TokenStream,
                     direction: &dyn Fn(usize) -> Option<TokenStream>|
     -> (Vec<TokenStream>, Vec<TokenStream>) {
        let mut lifts = Vec::new();
        let mut args = Vec::new();
        for (i, p) in vjp_sig.params.iter().enumerate() {
            let lifted = format_ident!("__rune_dual{}", i);
            let v = value(i);
            let ty = api.resolved(&p.ty);
            // Generic: every parameter naming the element is lifted. Concrete: the twin takes
            // `Tensor<Dual<E>>` where the function takes `Tensor<E>`, and plain numbers.
            let lift = match direction(i) {
                Some(d) => quote!(#rt::dual_seed(#v, #d)),
                None if generic && is_elem(&ty, &elem) => quote!(#rt::lift_element(#v)),
                None if generic && contains_type(&ty, &elem) => quote!(#rt::Lift::lift(#v)),
                None if !generic && contains_tensor_of(&ty, &elem) => {
                    quote!(#rt::Lift::lift(#v))
                }
                None => {
                    args.push(other(i));
                    continue;
                }
            };
            lifts.push(quote!(let #lifted = #lift;));
            args.push(if borrowed(p) {
                quote!(&#lifted)
            } else {
                quote!(#lifted)
            });
        }
        (lifts, args)
    };
    let active_at = sig
        .params
        .iter()
        .position(|p| p.active.is_some())
        .expect("one differentiated parameter");
    // `g_vjp` on dual numbers: generic, itself; concrete, the twin's forward pass and its
    // pullback (whose slot of the differentiated parameter is the gradient).
    let dual_vjp = |args: &[TokenStream]| match generic {
        true => quote!(#dual_path (#(#args),*)),
        false => {
            let (params, cotangent) = (&args[..n], &args[n]);
            let slot = syn::Index::from(active_at);
            quote!({
                let (__rune_value, __rune_pullback) = #name::dual_fwd(#(#params),*);
                (__rune_value, __rune_pullback(#cotangent).#slot)
            })
        }
    };
    let mut generated = no_items();
    for entry in [EntryPoint::Fwd, EntryPoint::Tangent] {
        let mut decl = vjp_api.declare(entry)?;
        // What seeding and splitting a structure needs, carried by the entry points (as by
        // `g_hvp`), so that a structure they cannot seed fails at a call, not at `g`; and the
        // direction of `g_hvp` lifted as a constant.
        decl.bounds.extend(api.hvp_bounds());
        if second_is_parameter {
            decl.bounds.extend(api.hvp_bounds_on_duals());
        }
        if a.structure && second_is_parameter {
            let ty = match api.resolved(&active.ty) {
                syn::Type::Reference(r) => *r.elem,
                ty => ty,
            };
            decl.bounds.push(syn::parse_quote!(
                #ty: #rt::Lift<Lifted = <#ty as #rt::DualSeed>::Dual>
            ));
        }
        let body =
            match entry {
                EntryPoint::Fwd => {
                    let (owned, args) = owned_copies(&vjp_sig.params);
                    let own = |i: usize| {
                        let copy = format_ident!("__rune_own{}", i);
                        quote!(&#copy)
                    };
                    let pass = |i: usize| args[i].clone();
                    let (lifts, dual_call) = dual_args(&own, &pass, &|i| {
                        (i == active_at).then(|| quote!(__rune_cotangent.1))
                    });
                    let plain = args[..n].iter();
                    let dual = dual_vjp(&dual_call);
                    let slots = vjp_sig.params.iter().enumerate().map(|(i, p)| {
                        match (p.active.is_some(), i) {
                            (false, _) => quote!(#rt::NoGrad),
                            (true, i) if i == n => quote!(#rt::dual_tangent(&__rune_dual_value)),
                            (true, _) => quote!(#rt::GradPart::plus(
                                __rune_plain,
                                #rt::dual_tangent(&__rune_dual_grad)
                            )),
                        }
                    });
                    let cot = vjp_sig.cotangent_type();
                    quote! {
                        #(#owned)*
                        let __rune_value = #plain_path #turbofish (#(#names),*);
                        (__rune_value, move |__rune_cotangent: #cot| {
                            let (_, __rune_plain) =
                                #plain_path #turbofish (#(#plain,)* __rune_cotangent.0);
                            #(#lifts)*
                            let (__rune_dual_value, __rune_dual_grad) = #dual;
                            (#(#slots,)*)
                        })
                    }
                }
                _ => {
                    let directions = vjp_sig.params.iter().enumerate().filter_map(|(i, p)| {
                        p.active.as_ref()?;
                        let local = format_ident!("__rune_direction_{}", i);
                        let direction = direction(p, i, false);
                        Some(quote!(let #local = #direction;))
                    });
                    let by_ref = |i: usize| {
                        let ident = &vjp_sig.params[i].ident;
                        if borrowed(&vjp_sig.params[i]) {
                            quote!(#ident)
                        } else {
                            quote!(&#ident)
                        }
                    };
                    let pass = |i: usize| vjp_sig.params[i].ident.to_token_stream();
                    let (lifts, dual_call) = dual_args(&by_ref, &pass, &|i| {
                        vjp_sig.params[i].active.as_ref().map(|_| {
                            let local = format_ident!("__rune_direction_{}", i);
                            quote!(&#local)
                        })
                    });
                    let dual = dual_vjp(&dual_call);
                    // The value from a plain call: the dual call rounds its primal differently.
                    quote! {
                        #(#directions)*
                        #(#lifts)*
                        let (__rune_dual_value, __rune_dual_grad) = #dual;
                        (
                            #plain_path #turbofish (#(#names),*),
                            (
                                #rt::dual_tangent(&__rune_dual_value),
                                #rt::dual_tangent(&__rune_dual_grad),
                            ),
                        )
                    }
                }
            };
        generated.hidden.extend(vjp_api.write(&decl, body));
    }
    Some(place(&vjp_func, site.host, vec![generated]))
}

/// Whether `ty` (or what it references) is the element type itself.
fn is_elem(ty: &syn::Type, elem: &syn::Type) -> bool {
    match ty {
        syn::Type::Reference(r) => &*r.elem == elem,
        ty => ty == elem,
    }
}

/// The turbofish instantiating `func`'s element type `elem` with its dual numbers.
fn dual_turbofish(func: &ItemFn, elem: &syn::Type) -> TokenStream {
    let rt = rt();
    let args = func.sig.generics.params.iter().filter_map(|g| match g {
        syn::GenericParam::Type(t) if matches!(elem, syn::Type::Path(p) if p.path.is_ident(&t.ident)) => {
            Some(quote!(#rt::Dual<#elem>))
        }
        syn::GenericParam::Type(t) => Some(t.ident.to_token_stream()),
        syn::GenericParam::Const(c) => Some(c.ident.to_token_stream()),
        syn::GenericParam::Lifetime(_) => None,
    });
    quote!(::<#(#args),*>)
}
