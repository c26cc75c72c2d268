//! Gradients that are differentiable themselves: for a function `g` with `g_hvp`, the hidden
//! entry points of `g_grad` as a function (`g_grad::fwd`, `g_grad::tangent`), so that a
//! `#[differentiable]` function calling `g_grad(..)` (a gradient penalty, a step of inner
//! gradient descent) is differentiated through it like through any call.
//!
//! `g_grad` maps the parameters to the gradient `∇g`. Its derivative is the Hessian `H` of `g`
//! over all of its differentiated parameters, which is symmetric, so one Hessian-vector product
//! is both rules: the pullback of a cotangent `ḡ` is `H ḡ`, the tangent along `ṫ` is `H ṫ`.
//! Both run `g_hvp` (forward over reverse). A function generic over its element type gets the
//! dual-number entry points too, so a caller with `f_hvp` differentiates `g_grad` once more
//! (third order, on dual numbers of dual numbers).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, ItemFn};

use super::api::EntryPoint;
use super::{place, rt, Api, Generated, Host, Inherent};
use crate::parse::{Param, Passing, Returns, Signature};

/// The hidden entry points of `g_grad` for function `func` (`g`), or `None` when `g` has no
/// `g_hvp`, returns numbers, or takes a parameter the pullback cannot own (anything but tensors
/// and numbers).
pub fn grad_function(
    func: &ItemFn,
    sig: &Signature,
    hvp_twin: bool,
    site: Site,
) -> Option<TokenStream> {
    let api = site.api(func, sig, hvp_twin);
    api.hvp_elem()?;
    // A function of numbers takes numbers, not arrays, whose gradients would be arrays.
    let arrays = sig.active().any(|(_, a)| a.array);
    if sig.fallible.is_some() || arrays || sig.params.iter().any(|p| !ownable(p)) {
        return None;
    }
    let name = &func.sig.ident;
    let grad_name = format_ident!("{}_grad", name);
    let (grad_path, hvp_path) = (
        site.path(&grad_name),
        site.path(&format_ident!("{}_hvp", name)),
    );
    // `g_grad` as a function: `g`'s parameters, its gradients returned.
    let grads: Vec<syn::Type> = sig
        .active()
        .map(|(p, _)| syn::parse2(Signature::grad_type(p)).expect("a gradient type parses"))
        .collect();
    let returns = match grads.as_slice() {
        [one] => Returns::Single(one.clone()),
        _ => Returns::Tuple(grads),
    };
    let grad_sig = Signature {
        params: sig.params.clone(),
        returns,
        fallible: None,
        scalar_out: sig.scalar_out,
        array_out: None,
    };
    let grad_func = renamed(func, &grad_name);
    let grad_api = site.api(&grad_func, &grad_sig, false);
    let (_, ty_generics, _) = func.sig.generics.split_for_impl();
    let turbofish = ty_generics.as_turbofish();
    let names: Vec<&Ident> = sig.params.iter().map(|p| &p.ident).collect();
    let actives = sig.active().count();
    // The Hessian-vector products, one a differentiated parameter (`__rune_h` or its fields).
    let products: Vec<TokenStream> = (0..actives)
        .map(|k| match actives {
            1 => quote!(__rune_h),
            _ => {
                let k = syn::Index::from(k);
                quote!(__rune_h.#k)
            }
        })
        .collect();
    let rt = rt();
    // What `g_hvp` needs of a structure parameter, carried by each entry point (as by
    // `g_hvp`), so that a structure `g_hvp` cannot seed fails at a call, not at `g`.
    let bounds = api.hvp_bounds();
    let mut generated = no_items();
    for entry in EntryPoint::ALL {
        let Some(mut decl) = grad_api.declare(entry) else {
            continue;
        };
        decl.bounds.extend(bounds.iter().cloned());
        let body = match entry {
            EntryPoint::Fwd => {
                // The pullback owns copies of the arguments (tensors share their buffers).
                let (owned, args) = owned_copies(&sig.params);
                let directions: Vec<TokenStream> = (0..actives)
                    .map(|k| match actives {
                        1 => quote!(__rune_cotangent),
                        _ => {
                            let k = syn::Index::from(k);
                            quote!(__rune_cotangent.#k)
                        }
                    })
                    .collect();
                let mut products = products.iter();
                let slots = sig.params.iter().map(|p| match p.active {
                    Some(_) => {
                        let product = products.next().expect("one product a parameter");
                        quote!(#product)
                    }
                    None => quote!(#rt::NoGrad),
                });
                let cot = grad_sig.cotangent_type();
                quote! {
                    #(#owned)*
                    let __rune_value = #grad_path #turbofish (#(#names),*);
                    (__rune_value, move |__rune_cotangent: #cot| {
                        let (_, __rune_h) = #hvp_path #turbofish (#(#args,)* #(#directions),*);
                        (#(#slots,)*)
                    })
                }
            }
            EntryPoint::Tangent => {
                // The tangents first: an owned parameter moves into the call.
                let (locals, tangents): (Vec<_>, Vec<_>) = sig
                    .params
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.active.is_some())
                    .map(|(i, p)| {
                        let local = format_ident!("__rune_direction_{}", i);
                        let direction = direction(p, i, sig.scalar_out);
                        (quote!(let #local = #direction;), quote!(&#local))
                    })
                    .unzip();
                quote! {
                    #(#locals)*
                    #hvp_path #turbofish (#(#names,)* #(#tangents),*)
                }
            }
            EntryPoint::DualFwd => {
                let fwd = grad_api.hidden_path("fwd");
                quote!(#fwd #turbofish (#(#names),*))
            }
            EntryPoint::DualTangent => {
                let tangent = grad_api.hidden_path("tangent");
                let slots = (0..sig.params.len()).map(crate::names::tangent_param);
                quote!(#tangent #turbofish (#(#names,)* #(#slots),*))
            }
            // The public entry points of `g_grad` itself are not written (its gradient is
            // `g_hvp`'s business); a caller's passes reach the hidden ones only.
            _ => continue,
        };
        let item = grad_api.write(&decl, body);
        generated.hidden.extend(item);
    }
    Some(place(&grad_func, site.host, vec![generated]))
}

/// The pullback's copies of `params` (`let __rune_own1 = x.clone();`, tensors sharing their
/// buffers), and the arguments that pass them on as the parameters are declared.
pub(super) fn owned_copies(params: &[Param]) -> (Vec<TokenStream>, Vec<TokenStream>) {
    params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let ident = &p.ident;
            let copy = format_ident!("__rune_own{}", i);
            if borrowed(p) {
                (
                    quote!(let #copy = ::core::clone::Clone::clone(#ident);),
                    quote!(&#copy),
                )
            } else {
                (
                    quote!(let #copy = ::core::clone::Clone::clone(&#ident);),
                    quote!(::core::clone::Clone::clone(&#copy)),
                )
            }
        })
        .unzip()
}

/// Whether the parameter is taken by reference.
pub(super) fn borrowed(p: &Param) -> bool {
    matches!(p.ty, syn::Type::Reference(_))
}

/// Whether the pullback can own a copy of the parameter: a tensor, a differentiated structure
/// (its leaves share their buffers), or a number, `bool` or `usize` (by value or by reference).
pub(super) fn ownable(p: &Param) -> bool {
    if p.active.as_ref().is_some_and(|a| !a.scalar) {
        return true;
    }
    let inner = match &p.ty {
        syn::Type::Reference(r) => &*r.elem,
        ty => ty,
    };
    let text = quote!(#inner).to_string();
    text.starts_with("Tensor <")
        || matches!(
            text.as_str(),
            "f32" | "f64" | "bool" | "usize" | "isize" | "i32" | "i64" | "u32" | "u64"
        )
}

/// The hidden entry points of `g_jvp` for a function `g` with `g_hvp` (of tensors or of
/// numbers, one value), or `None` for any other function.
///
/// `g_jvp(x, t) = (g(x), ∇g·t)`. With `(∇g, H t)` from one `g_hvp(x, t)`, its pullback of
/// `(c₀, c₁)` is `x̄ = c₀ ∇g + c₁ H t`, `t̄ = c₁ ∇g`, and its tangent along `(u, ṫ)` is
/// `(∇g·u, u·H t + ∇g·ṫ)`: forward mode inside a differentiated function, as GradBench's
/// `particle` takes the potential's slope along each axis. The value has one element (`g_hvp`
/// checks it), so `c₀` and `c₁` are numbers (`rune_runtime::JvpPart`).
pub fn jvp_function(
    func: &ItemFn,
    sig: &Signature,
    hvp_twin: bool,
    site: Site,
) -> Option<TokenStream> {
    let api = site.api(func, sig, hvp_twin);
    api.hvp_elem()?;
    let plain = sig.active().all(|(_, a)| !a.array);
    let Returns::Single(value_ty) = &sig.returns else {
        return None;
    };
    if !plain || sig.fallible.is_some() || sig.params.iter().any(|p| !ownable(p)) {
        return None;
    }
    let name = &func.sig.ident;
    let jvp_name = format_ident!("{}_jvp", name);
    let (jvp_path, hvp_path) = (
        site.path(&jvp_name),
        site.path(&format_ident!("{}_hvp", name)),
    );
    // `g_jvp` as a function: `g`'s parameters, then a tangent for each differentiated one.
    let tangent_params: Vec<Param> = sig
        .active()
        .map(|(p, a)| {
            let grad = Signature::grad_type(p);
            Param {
                ident: format_ident!("{}_tangent", p.ident),
                ty: syn::parse_quote!(&#grad),
                mutable: false,
                active: Some(crate::parse::Active {
                    passing: Passing::Borrowed,
                    ..a.clone()
                }),
            }
        })
        .collect();
    let mut params = sig.params.clone();
    params.extend(tangent_params.iter().cloned());
    let jvp_sig = Signature {
        params,
        returns: Returns::Tuple(vec![value_ty.clone(), value_ty.clone()]),
        fallible: None,
        scalar_out: sig.scalar_out,
        array_out: None,
    };
    let jvp_func = renamed(func, &jvp_name);
    let jvp_api = site.api(&jvp_func, &jvp_sig, false);
    let rt = rt();
    let (_, ty_generics, _) = func.sig.generics.split_for_impl();
    let turbofish = ty_generics.as_turbofish();
    let n = sig.params.len();
    let actives = sig.active().count();
    let part = |base: TokenStream, k: usize| match actives {
        1 => base,
        _ => {
            let k = syn::Index::from(k);
            quote!(#base.#k)
        }
    };
    let names: Vec<&Ident> = jvp_sig.params.iter().map(|p| &p.ident).collect();
    let bounds = api.hvp_bounds();
    let mut generated = no_items();
    for entry in [EntryPoint::Fwd, EntryPoint::Tangent] {
        let mut decl = jvp_api.declare(entry)?;
        decl.bounds.extend(bounds.iter().cloned());
        let body = match entry {
            EntryPoint::Fwd => {
                let (owned, args) = owned_copies(&jvp_sig.params);
                let mut k = 0;
                let slots = jvp_sig.params.iter().enumerate().map(|(i, p)| {
                    if p.active.is_none() {
                        return quote!(#rt::NoGrad);
                    }
                    if i >= n {
                        let g = part(quote!(__rune_g), i - n);
                        return quote!(#rt::GradPart::scaled(&#g, __rune_c1));
                    }
                    let (g, h) = (part(quote!(__rune_g), k), part(quote!(__rune_h), k));
                    k += 1;
                    quote!(#rt::GradPart::plus(
                        #rt::GradPart::scaled(&#g, __rune_c0),
                        #rt::GradPart::scaled(&#h, __rune_c1),
                    ))
                });
                let cot = jvp_sig.cotangent_type();
                quote! {
                    #(#owned)*
                    let __rune_value = #jvp_path #turbofish (#(#names),*);
                    (__rune_value, move |__rune_cotangent: #cot| {
                        let __rune_c0 = #rt::JvpPart::number(__rune_cotangent.0);
                        let __rune_c1 = #rt::JvpPart::number(__rune_cotangent.1);
                        let (__rune_g, __rune_h) = #hvp_path #turbofish (#(#args),*);
                        (#(#slots,)*)
                    })
                }
            }
            _ => {
                let directions = jvp_sig.params.iter().enumerate().filter_map(|(i, p)| {
                    p.active.as_ref()?;
                    let local = format_ident!("__rune_direction_{}", i);
                    let direction = direction(p, i, sig.scalar_out);
                    Some(quote!(let #local = #direction;))
                });
                // `u`: the directions of `g`'s parameters; `ṫ`: of the tangents.
                let active_at: Vec<usize> = sig
                    .params
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.active.is_some())
                    .map(|(i, _)| i)
                    .collect();
                let value_tangent = active_at.iter().enumerate().map(|(k, i)| {
                    let g = part(quote!(__rune_g), k);
                    let u = format_ident!("__rune_direction_{}", i);
                    quote!(#rt::GradPart::inner(&#g, &#u))
                });
                let slope_tangent = active_at.iter().enumerate().map(|(k, i)| {
                    let (g, h) = (part(quote!(__rune_g), k), part(quote!(__rune_h), k));
                    let u = format_ident!("__rune_direction_{}", i);
                    let dt = format_ident!("__rune_direction_{}", n + k);
                    quote!(#rt::GradPart::inner(&#u, &#h) + #rt::GradPart::inner(&#g, &#dt))
                });
                // The tangents by reference: an owned parameter moves into the calls last.
                let by_ref = jvp_sig.params.iter().map(keeping);
                quote! {
                    #(#directions)*
                    let (__rune_g, __rune_h) = #hvp_path #turbofish (#(#by_ref),*);
                    let __rune_value = #jvp_path #turbofish (#(#names),*);
                    let __rune_first = #rt::JvpPart::like(&__rune_value.0, #(#value_tangent)+*);
                    let __rune_second = #rt::JvpPart::like(&__rune_value.0, #(#slope_tangent)+*);
                    (__rune_value, (__rune_first, __rune_second))
                }
            }
        };
        generated.hidden.extend(jvp_api.write(&decl, body));
    }
    Some(place(&jvp_func, site.host, vec![generated]))
}

/// The hidden entry points of `g_value_and_grad` for a function `g` with `g_hvp` of tensors and
/// numbers, or `None` for any other function.
///
/// `g_value_and_grad(x) = (g(x), ∇g)`. With `(∇g, H ḡ)` from one `g_hvp(x, ḡ)`, its pullback
/// of `(c₀, ḡ)` is `c₀ ∇g + H ḡ`, and its tangent along `u` is `(∇g·u, H u)`: the loss and the
/// gradient of an inner step (MAML's inner loop, a line search) in one call. With several
/// differentiated parameters the gradient is a tuple (`let (loss, (gw, gb)) =
/// fit_value_and_grad(w, b, ..);`), whose cotangent is a reference to a tuple, and `∇g·u` sums
/// over them.
pub fn value_and_grad_function(
    func: &ItemFn,
    sig: &Signature,
    hvp_twin: bool,
    site: Site,
) -> Option<TokenStream> {
    let api = site.api(func, sig, hvp_twin);
    api.hvp_elem()?;
    let Returns::Single(value_ty) = &sig.returns else {
        return None;
    };
    let plain = sig.active().all(|(_, a)| !a.array);
    if !plain || sig.fallible.is_some() || sig.params.iter().any(|p| !ownable(p)) {
        return None;
    }
    let name = &func.sig.ident;
    let vg_name = format_ident!("{}_value_and_grad", name);
    let (vg_path, hvp_path) = (
        site.path(&vg_name),
        site.path(&format_ident!("{}_hvp", name)),
    );
    let plain_path = site.path(name);
    let grads: syn::Type = syn::parse2(sig.grads_type()).expect("a gradient type parses");
    let vg_sig = Signature {
        params: sig.params.clone(),
        returns: Returns::Tuple(vec![value_ty.clone(), grads]),
        fallible: None,
        scalar_out: sig.scalar_out,
        array_out: None,
    };
    let vg_func = renamed(func, &vg_name);
    let vg_api = site.api(&vg_func, &vg_sig, false);
    let rt = rt();
    let (_, ty_generics, _) = func.sig.generics.split_for_impl();
    let turbofish = ty_generics.as_turbofish();
    let names: Vec<&Ident> = sig.params.iter().map(|p| &p.ident).collect();
    let actives = sig.active().count();
    let part = |base: TokenStream, k: usize| match actives {
        1 => base,
        _ => {
            let k = syn::Index::from(k);
            quote!(#base.#k)
        }
    };
    let bounds = api.hvp_bounds();
    let mut generated = no_items();
    for entry in [EntryPoint::Fwd, EntryPoint::Tangent] {
        let mut decl = vg_api.declare(entry)?;
        decl.bounds.extend(bounds.iter().cloned());
        let body = match entry {
            EntryPoint::Fwd => {
                let (owned, args) = owned_copies(&sig.params);
                let directions: Vec<TokenStream> = (0..actives)
                    .map(|k| match actives {
                        1 => quote!(__rune_cotangent.1),
                        _ => {
                            let k = syn::Index::from(k);
                            quote!(&__rune_cotangent.1.#k)
                        }
                    })
                    .collect();
                let mut k = 0;
                let slots = sig.params.iter().map(|p| {
                    if p.active.is_none() {
                        return quote!(#rt::NoGrad);
                    }
                    let (g, h) = (part(quote!(__rune_g), k), part(quote!(__rune_h), k));
                    k += 1;
                    quote!(#rt::GradPart::plus(#rt::GradPart::scaled(&#g, __rune_c0), #h))
                });
                let cot = vg_sig.cotangent_type();
                quote! {
                    #(#owned)*
                    let __rune_value = #vg_path #turbofish (#(#names),*);
                    (__rune_value, move |__rune_cotangent: #cot| {
                        let __rune_c0 = #rt::JvpPart::number(__rune_cotangent.0);
                        let (__rune_g, __rune_h) =
                            #hvp_path #turbofish (#(#args,)* #(#directions),*);
                        (#(#slots,)*)
                    })
                }
            }
            _ => {
                let active_at: Vec<(usize, &Param)> = sig
                    .params
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.active.is_some())
                    .collect();
                let locals: Vec<Ident> = active_at
                    .iter()
                    .map(|(i, _)| format_ident!("__rune_direction_{}", i))
                    .collect();
                let directions = active_at.iter().zip(&locals).map(|((i, p), local)| {
                    let direction = direction(p, *i, sig.scalar_out);
                    quote!(let #local = #direction;)
                });
                let slope = locals.iter().enumerate().map(|(k, u)| {
                    let g = part(quote!(__rune_g), k);
                    quote!(#rt::GradPart::inner(&#g, &#u))
                });
                let by_ref = sig.params.iter().map(keeping);
                quote! {
                    #(#directions)*
                    let (__rune_g, __rune_h) =
                        #hvp_path #turbofish (#(#by_ref,)* #(&#locals),*);
                    let __rune_value = #plain_path #turbofish (#(#names),*);
                    let __rune_slope = #rt::JvpPart::like(&__rune_value, #(#slope)+*);
                    ((__rune_value, __rune_g), (__rune_slope, __rune_h))
                }
            }
        };
        generated.hidden.extend(vg_api.write(&decl, body));
    }
    Some(place(&vg_func, site.host, vec![generated]))
}

/// Where a function with nested entry points is: free, or a method of an inherent `impl` block
/// under the attribute (whose `f_hvp` is generated, see [`Inherent`]).
#[derive(Clone, Copy)]
pub struct Site<'a> {
    pub host: Host,
    pub inherent: Option<&'a Inherent>,
}

impl<'a> Site<'a> {
    /// A free function.
    pub const FREE: Site<'static> = Site {
        host: Host::Free,
        inherent: None,
    };

    /// The `Api` of `func` here, not a twin.
    pub(super) fn api(self, func: &'a ItemFn, sig: &'a Signature, hvp_twin: bool) -> Api<'a> {
        Api {
            func,
            sig,
            host: self.host,
            is_twin: false,
            hvp_twin,
            trait_method: None,
            inherent: self.inherent,
        }
    }

    /// The path calling function `name` defined here: `name`, or `Self::name` in a block.
    pub(super) fn path(self, name: &Ident) -> TokenStream {
        match self.host {
            Host::Free => quote!(#name),
            Host::Impl => quote!(Self::#name),
        }
    }
}

/// No items yet.
pub(super) fn no_items() -> Generated {
    Generated {
        hidden: TokenStream::new(),
        public: TokenStream::new(),
    }
}

/// `func` under another name (a generated entry point as a function of its own).
pub(super) fn renamed(func: &ItemFn, name: &Ident) -> ItemFn {
    let mut out = func.clone();
    out.sig.ident = name.clone();
    out
}

/// The direction of differentiated parameter `p` (at position `i`) in a `tangent` entry point:
/// its tangent slot's tangent, or zeros of the parameter's shape (a number's tangent for a
/// function of numbers).
pub(super) fn direction(p: &Param, i: usize, numbers: bool) -> TokenStream {
    let rt = rt();
    let slot = crate::names::tangent_param(i);
    let ident = &p.ident;
    let primal = match p.active.as_ref().map(|a| a.passing) {
        Some(Passing::Owned) => quote!(&#ident),
        _ => quote!(#ident),
    };
    if p.active.as_ref().is_some_and(|a| a.structure) {
        quote!(#rt::StructTangentSlot::tangent_or_zeros(#slot, #primal))
    } else if numbers {
        quote!(#rt::TangentSlot::number_tangent(#slot))
    } else {
        quote!(#rt::TangentSlot::tangent_or_zeros(#slot, #primal))
    }
}

/// Parameter `p` passed to a call that comes before a last one taking it: an owned parameter
/// cloned (it moves into the last call), a `#[nodiff]` one too (`data: Tensor<f64>`; a number
/// is `Copy`, which `clone` copies).
fn keeping(p: &Param) -> TokenStream {
    let ident = &p.ident;
    let owned = match p.active.as_ref() {
        Some(a) => a.passing == Passing::Owned,
        None => !is_reference(&p.ty),
    };
    if owned {
        quote!(::core::clone::Clone::clone(&#ident))
    } else {
        quote!(#ident)
    }
}

/// Whether `ty` is a reference, seen through the invisible groups of a macro fragment.
fn is_reference(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Group(g) => is_reference(&g.elem),
        syn::Type::Reference(_) => true,
        _ => false,
    }
}
