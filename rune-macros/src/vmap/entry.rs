//! The batched entry points: `f_vmap`, `f_grad_vmap`, `f_value_and_grad_vmap`, `f_vjp_vmap`
//! and `f_jvp_vmap`, each unpacking its `Batch` arguments and calling the twin `__vmap_f` or
//! one of its derivatives.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::ItemFn;

use super::{flag, VmapParam};

/// What a batched entry point does with the differentiated arguments before calling.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Broadcast {
    /// Nothing: they stay as given (`f_vmap`).
    None,
    /// Each gets a batch axis, so that each example has its own copy (per-example gradients).
    Active,
}

/// The entry points of `func`; `outputs`: the tensors of a function returning a tuple, which
/// has no gradient entry points (a gradient needs one value).
pub fn entry_points(
    func: &ItemFn,
    params: &[VmapParam],
    outputs: Option<&[syn::Type]>,
) -> TokenStream {
    entry_points_named(func, params, outputs, "")
}

/// For a method whose `self` is differentiated: the entry points again as associated functions
/// whose first argument stands for `self` and is batched like any structure
/// (`Deep::predict_vmap_self(Batch(&ensemble), &x)`, `jax.vmap(Deep.predict, in_axes=(0,
/// None))`), named with `_self` after `vmap`; `None` for any other function.
pub fn self_batched_entry_points(
    func: &ItemFn,
    params: &[VmapParam],
    outputs: Option<&[syn::Type]>,
) -> Option<TokenStream> {
    let receiver = params.iter().find(|p| p.receiver && p.active)?;
    let this = VmapParam {
        ident: format_ident!("this", span = receiver.ident.span()),
        ty: syn::parse_quote!(&Self),
        tensor: Some(syn::parse_quote!(Self)),
        structure: true,
        receiver: false,
        borrowed: true,
        active: true,
    };
    let params: Vec<VmapParam> = params
        .iter()
        .map(|p| if p.receiver { this.clone() } else { p.clone() })
        .collect();
    Some(entry_points_named(func, &params, outputs, "_self"))
}

/// [`entry_points`], each name ending in `suffix`; without a receiver among `params` in a
/// method (`self_batched_entry_points`), the twin is called by path, `Self::__vmap_f(this, ..)`.
fn entry_points_named(
    func: &ItemFn,
    params: &[VmapParam],
    outputs: Option<&[syn::Type]>,
    suffix: &str,
) -> TokenStream {
    let name = &func.sig.ident;
    let text = name.to_string();
    let twin = format_ident!("__vmap_{}", name);
    let rt = quote!(::rune_ad::__private);
    let vis = &func.vis;
    let generics = &func.sig.generics;
    let where_clause = &generics.where_clause;
    let output = match &func.sig.output {
        syn::ReturnType::Type(_, t) => quote!(#t),
        syn::ReturnType::Default => quote!(()),
    };
    let declared = declared(params);
    let active: Vec<&VmapParam> = params.iter().filter(|p| p.active).collect();
    let grads_ty = grads_type(params);
    // Unpacks the tensor arguments, finds the batch length, and batches what `broadcast` says.
    let prologue = |entry: &str, broadcast: Broadcast, extra: &[TokenStream]| {
        let (mut out, mut sizes) = unpack_all(params);
        sizes.extend(extra.iter().cloned());
        let entry = format!("{text}_{entry}");
        out.extend(quote!(let __vmap_n = #rt::vmap_size(#entry, &[#(#sizes),*]);));
        if broadcast == Broadcast::Active {
            for p in params.iter().filter(|p| p.active) {
                let (ident, f) = (local(p), flag(&p.ident));
                let owned = format_ident!("__vmap_o_{}", p.ident);
                let batched = batch_fn(p);
                out.extend(quote! {
                    let #owned = #rt::#batched(#ident, #f, __vmap_n);
                    let #ident = &#owned;
                    let #f = true;
                });
            }
        }
        out
    };
    let args = call_args(params);
    let receiver = params.iter().find(|p| p.receiver).map(local);
    let by_path = !suffix.is_empty();
    let callee = |f: syn::Ident| match &receiver {
        Some(r) => quote!(#r.#f),
        None if by_path => quote!(Self::#f),
        None => quote!(#f),
    };
    let (twin, pullback, jvp) = (
        callee(twin.clone()),
        callee(format_ident!("{}_pullback", twin)),
        callee(format_ident!("{}_jvp", twin)),
    );
    let (vmap, grad, value_and_grad, vjp, jvp_entry) = (
        format_ident!("{}_vmap{}", name, suffix),
        format_ident!("{}_grad_vmap{}", name, suffix),
        format_ident!("{}_value_and_grad_vmap{}", name, suffix),
        format_ident!("{}_vjp_vmap{}", name, suffix),
        format_ident!("{}_jvp_vmap{}", name, suffix),
    );
    let plain = prologue("vmap", Broadcast::None, &[]);
    let batched = prologue("grad_vmap", Broadcast::Active, &[]);
    let batched_vg = prologue("value_and_grad_vmap", Broadcast::Active, &[]);
    // The cotangent: one `impl VmapArg`, or a tuple of them for a tuple of outputs.
    let cts: Vec<(syn::Ident, syn::Ident, TokenStream)> = match outputs {
        None => vec![(
            format_ident!("__vmap_ct"),
            format_ident!("__vmap_b_ct"),
            quote!(&__vmap_ct),
        )],
        Some(tys) => (0..tys.len())
            .map(|k| {
                let i = syn::Index::from(k);
                (
                    format_ident!("__vmap_ct{}", k),
                    format_ident!("__vmap_b_ct{}", k),
                    quote!(&__vmap_ct.#i),
                )
            })
            .collect(),
    };
    let ct_unpack = cts
        .iter()
        .map(|(c, b, from)| quote!(let (#c, #b) = ::rune_ad::VmapArg::vmap_arg(#from);));
    let ct_sizes: Vec<TokenStream> = cts
        .iter()
        .enumerate()
        .map(|(k, (c, b, _))| {
            let label = match outputs {
                None => "cotangent".to_string(),
                Some(_) => format!("cotangent {k}"),
            };
            quote!((#label, #c.shape(), #b))
        })
        .collect();
    let ct_batch = cts
        .iter()
        .map(|(c, b, _)| quote!(let #c = #rt::vmap_batched(#c, #b, __vmap_n);));
    let ct_names: Vec<&syn::Ident> = cts.iter().map(|c| &c.0).collect();
    let ct_arg = match outputs {
        None => quote!(&__vmap_ct),
        Some(_) => quote!((#(&#ct_names,)*)),
    };
    let ct_ty = match outputs {
        None => quote!(impl ::rune_ad::VmapArg<#output>),
        Some(tys) => quote!((#(impl ::rune_ad::VmapArg<#tys>,)*)),
    };
    let batched_vjp = prologue("vjp_vmap", Broadcast::Active, &ct_sizes);
    let one_each = quote! {
        let __vmap_ct = #rt::vmap_ones_per_example(
            concat!(#text, "_grad_vmap"), __vmap_value.shape(), __vmap_n);
    };
    // Tangents: an argument is batched when it or its tangent is.
    let tangents: Vec<_> = active
        .iter()
        .map(|p| format_ident!("__vmap_d_{}", p.ident))
        .collect();
    let tangent_params = active.iter().zip(&tangents).map(|(p, d)| {
        let t = &p.tensor;
        quote!(#d: impl ::rune_ad::VmapArg<#t>)
    });
    let (mut jvp_prologue, mut jvp_sizes) = unpack_all(params);
    for (p, d) in active.iter().zip(&tangents) {
        let df = format_ident!("__vmap_db_{}", p.ident);
        jvp_prologue.extend(quote!(let (#d, #df) = ::rune_ad::VmapArg::vmap_arg(&#d);));
        let label = format!("the tangent of {}", p.ident);
        let shape = if p.structure {
            quote!(#rt::vmap_leaf_shape(#d))
        } else {
            quote!(#d.shape())
        };
        jvp_sizes.push(quote!((#label, #shape, #df)));
    }
    let jvp_entry_name = format!("{text}_jvp_vmap");
    jvp_prologue
        .extend(quote!(let __vmap_n = #rt::vmap_size(#jvp_entry_name, &[#(#jvp_sizes),*]);));
    for (p, d) in active.iter().zip(&tangents) {
        let (ident, f, df) = (
            local(p),
            flag(&p.ident),
            format_ident!("__vmap_db_{}", p.ident),
        );
        let (owned, downed) = (
            format_ident!("__vmap_o_{}", p.ident),
            format_ident!("__vmap_do_{}", p.ident),
        );
        let batched = batch_fn(p);
        jvp_prologue.extend(quote! {
            let __vmap_both = #f || #df;
            let #owned = if __vmap_both && !#f {
                #rt::#batched(#ident, false, __vmap_n)
            } else {
                #ident.clone()
            };
            let #downed = if __vmap_both && !#df {
                #rt::#batched(#d, false, __vmap_n)
            } else {
                #d.clone()
            };
            let #ident = &#owned;
            let #f = __vmap_both;
        });
    }
    let tangent_args = active.iter().map(|p| {
        let downed = format_ident!("__vmap_do_{}", p.ident);
        quote!(&#downed)
    });
    let out_ty = &output;
    let doc = |what: &str| {
        format!("`{text}`'s {what}, batched over the leading axis of each `Batch` argument (see `#[differentiable(vmap)]`).")
    };
    let (d_vmap, d_grad, d_vg, d_vjp, d_jvp) = (
        doc("value"),
        doc("per-example gradients"),
        doc("values and per-example gradients"),
        doc("per-example VJP"),
        doc("JVP"),
    );
    let gradients = outputs.is_none().then(|| {
        quote! {
            #[doc = #d_grad]
            #[allow(clippy::too_many_arguments, unused_variables)]
            #vis fn #grad #generics (#(#declared),*) -> #grads_ty #where_clause {
                #batched
                let (__vmap_value, __vmap_pullback) = #pullback(#(#args),*);
                #one_each
                __vmap_pullback(&__vmap_ct)
            }

            #[doc = #d_vg]
            #[allow(clippy::too_many_arguments, unused_variables)]
            #vis fn #value_and_grad #generics (#(#declared),*) -> (#out_ty, #grads_ty) #where_clause {
                #batched_vg
                let (__vmap_value, __vmap_pullback) = #pullback(#(#args),*);
                #one_each
                let __vmap_grads = __vmap_pullback(&__vmap_ct);
                (__vmap_value, __vmap_grads)
            }
        }
    });
    quote! {
        #[doc = #d_vmap]
        #[allow(clippy::too_many_arguments, unused_variables)]
        #vis fn #vmap #generics (#(#declared),*) -> #output #where_clause {
            #plain
            #twin(#(#args),*)
        }

        #gradients

        #[doc = #d_vjp]
        #[allow(clippy::too_many_arguments, unused_variables)]
        #vis fn #vjp #generics (#(#declared,)* __vmap_ct: #ct_ty) -> (#out_ty, #grads_ty) #where_clause {
            #(#ct_unpack)*
            #batched_vjp
            let (__vmap_value, __vmap_pullback) = #pullback(#(#args),*);
            #(#ct_batch)*
            let __vmap_grads = __vmap_pullback(#ct_arg);
            (__vmap_value, __vmap_grads)
        }

        #[doc = #d_jvp]
        #[allow(clippy::too_many_arguments, unused_variables)]
        #vis fn #jvp_entry #generics (#(#declared,)* #(#tangent_params),*) -> (#out_ty, #out_ty) #where_clause {
            #jvp_prologue
            #jvp(#(#args,)* #(#tangent_args),*)
        }
    }
}

/// Each parameter as a batched entry point declares it: tensors and structures as
/// `impl VmapArg<X>`, `&self` as itself, constants as declared.
fn declared(params: &[VmapParam]) -> Vec<TokenStream> {
    params
        .iter()
        .map(|p| {
            let ident = &p.ident;
            match &p.tensor {
                _ if p.receiver => quote!(&self),
                Some(t) => quote!(#ident: impl ::rune_ad::VmapArg<#t>),
                None => {
                    let ty = &p.ty;
                    quote!(#ident: #ty)
                }
            }
        })
        .collect()
}

/// The gradients' type: one differentiated parameter's, or a tuple of them.
fn grads_type(params: &[VmapParam]) -> TokenStream {
    let tys: Vec<_> = params
        .iter()
        .filter(|p| p.active)
        .map(|p| p.tensor.clone())
        .collect();
    if tys.len() == 1 {
        quote!(#(#tys)*)
    } else {
        quote!((#(#tys),*))
    }
}

/// The arguments of a call of the twin (or of a function taking its parameters): each
/// argument, then each flag, then the batch length.
fn call_args(params: &[VmapParam]) -> Vec<TokenStream> {
    params
        .iter()
        .filter(|p| !p.receiver)
        .map(|p| {
            let ident = local(p);
            match (&p.tensor, p.borrowed) {
                (Some(_), true) | (None, _) => quote!(#ident),
                (Some(_), false) => quote!(#ident.clone()),
            }
        })
        .chain(params.iter().map(|p| match p.tensor {
            Some(_) => flag(&p.ident).into_token_stream(),
            None => quote!(false),
        }))
        .chain(std::iter::once(quote!(__vmap_n)))
        .collect()
}

/// `f_hvp_vmap` of a free function of tensors with `f_hvp`: per-example Hessian-vector
/// products. It is the HVP of `__vmap_sum_f`, the sum of the batched twin's values, with every
/// differentiated argument batched: each example differentiates its own copy, so the Hessian
/// is block diagonal and its product with the batched directions is each example's.
pub fn hvp_entry(func: &ItemFn, params: &[VmapParam], option: Option<TokenStream>) -> TokenStream {
    let name = &func.sig.ident;
    let text = format!("{name}_hvp_vmap");
    let rt = quote!(::rune_ad::__private);
    let twin = format_ident!("__vmap_{}", name);
    let sum = format_ident!("__vmap_sum_{}", name);
    let sum_hvp = format_ident!("__vmap_sum_{}_hvp", name);
    let entry = format_ident!("{}_hvp_vmap", name);
    let vis = &func.vis;
    let generics = &func.sig.generics;
    let where_clause = &generics.where_clause;
    // The sum of the twin's values, over the twin's parameters.
    let mut sig = func.sig.clone();
    sig.ident = sum.clone();
    for p in params {
        let f = flag(&p.ident);
        sig.inputs.push(syn::parse_quote!(#[nodiff] #f: bool));
    }
    sig.inputs
        .push(syn::parse_quote!(#[nodiff] __vmap_n: usize));
    let passed = params
        .iter()
        .map(|p| p.ident.to_token_stream())
        .chain(params.iter().map(|p| flag(&p.ident).into_token_stream()))
        .chain(std::iter::once(quote!(__vmap_n)));
    let declared = declared(params);
    let grads_ty = grads_type(params);
    let args = call_args(params);
    let active: Vec<&VmapParam> = params.iter().filter(|p| p.active).collect();
    let (mut prologue, mut sizes) = unpack_all(params);
    let mut directions = Vec::new();
    let mut batch = TokenStream::new();
    for p in &active {
        let (d, db) = (
            format_ident!("__vmap_d_{}", p.ident),
            format_ident!("__vmap_db_{}", p.ident),
        );
        let t = &p.tensor;
        directions.push(quote!(#d: impl ::rune_ad::VmapArg<#t>));
        prologue.extend(quote!(let (#d, #db) = ::rune_ad::VmapArg::vmap_arg(&#d);));
        let label = format!("the direction of {}", p.ident);
        sizes.push(quote!((#label, #d.shape(), #db)));
        let (ident, f) = (local(p), flag(&p.ident));
        let (owned, downed) = (
            format_ident!("__vmap_o_{}", p.ident),
            format_ident!("__vmap_do_{}", p.ident),
        );
        batch.extend(quote! {
            let #owned = #rt::vmap_batched(#ident, #f, __vmap_n);
            let #ident = &#owned;
            let #f = true;
            let #downed = #rt::vmap_batched(#d, #db, __vmap_n);
        });
    }
    let downed = active
        .iter()
        .map(|p| format_ident!("__vmap_do_{}", p.ident));
    let doc = format!(
        "`{name}`'s per-example Hessian-vector products: the gradient and the Hessian times \
         the direction of each example, batched over the leading axis of each `Batch` argument \
         (see `#[differentiable(vmap)]`)."
    );
    quote! {
        #[::rune_ad::differentiable #option]
        #[doc(hidden)]
        #[allow(clippy::all)]
        #vis #sig {
            #twin(#(#passed),*).sum()
        }

        #[doc = #doc]
        #[allow(clippy::too_many_arguments, unused_variables)]
        #vis fn #entry #generics (#(#declared,)* #(#directions),*) -> (#grads_ty, #grads_ty)
        #where_clause {
            #prologue
            let __vmap_n = #rt::vmap_size(#text, &[#(#sizes),*]);
            #batch
            #sum_hvp(#(#args,)* #(&#downed),*)
        }
    }
}

/// The variable holding the argument in an entry point: `self`'s is `__vmap_self`.
fn local(p: &VmapParam) -> syn::Ident {
    if p.receiver {
        format_ident!("__vmap_self")
    } else {
        p.ident.clone()
    }
}

/// The statements binding every tensor and structure argument and its flag, and the entries
/// of `vmap_size` that give the batch length.
fn unpack_all(params: &[VmapParam]) -> (TokenStream, Vec<TokenStream>) {
    let mut out = TokenStream::new();
    let mut sizes = Vec::new();
    for p in params.iter().filter(|p| p.tensor.is_some()) {
        out.extend(unpack(p));
        let (label, shape, f) = (p.ident.to_string(), lead_shape(p), flag(&p.ident));
        sizes.push(quote!((#label, #shape, #f)));
    }
    (out, sizes)
}

/// Binds the argument and its flag: a receiver is shared by every example.
fn unpack(p: &VmapParam) -> TokenStream {
    let (ident, f) = (local(p), flag(&p.ident));
    if p.receiver {
        quote!(let (#ident, #f) = (self, false);)
    } else {
        quote!(let (#ident, #f) = ::rune_ad::VmapArg::vmap_arg(&#ident);)
    }
}

/// The shape whose leading length is the argument's batch length.
fn lead_shape(p: &VmapParam) -> TokenStream {
    let ident = local(p);
    if p.structure {
        quote!(::rune_ad::__private::vmap_leaf_shape(#ident))
    } else {
        quote!(#ident.shape())
    }
}

/// The runtime function giving an argument of `p`'s kind a batch axis.
fn batch_fn(p: &VmapParam) -> syn::Ident {
    if p.structure {
        format_ident!("vmap_batched_structure")
    } else {
        format_ident!("vmap_batched")
    }
}
