//! The entry point: runs the stages and, on errors, emits them with fallback items.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{ItemFn, ItemImpl, ItemTrait, TraitItemFn};

use crate::diag::Errors;
use crate::emit::{self, Emitter, Host, TraitMethod};
use crate::parse::{Options, Signature};
use crate::{analyse, fuse, lower, numbers, parse, twin};

/// Expands `#[differentiable(args)] item`: a function (a free one, or a method or associated
/// function in an `impl` block), or an inherent `impl` block, whose every function it applies to.
pub fn differentiable(args: TokenStream, item: TokenStream) -> TokenStream {
    if let Ok(func) = syn::parse2::<ItemFn>(item.clone()) {
        // A function taking `self` is in an `impl` block; any other is taken to be free.
        let host = if func.sig.receiver().is_some() {
            Host::Impl
        } else {
            Host::Free
        };
        return function(args, func, host, None, None);
    }
    if let Ok(block) = syn::parse2::<ItemImpl>(item.clone()) {
        return impl_block(args, block);
    }
    if let Ok(block) = syn::parse2::<ItemTrait>(item.clone()) {
        return trait_block(args, block);
    }
    // A method declared in a trait, without a body (one with a body parsed as a function).
    if let Ok(method) = syn::parse2::<TraitItemFn>(item.clone()) {
        return trait_method(args, method, None);
    }
    let mut errors = Errors::default();
    errors.at(
        &item,
        "#[differentiable] applies to a function (`fn f(x: &Tensor<T>, ..) -> Tensor<T>`), to \
         an `impl` block or to a trait",
    );
    let errs = errors.to_compile_errors();
    quote!(#errs #item)
}

/// `#[differentiable(args)]` on an `impl` block (inherent, or of a trait whose methods declare
/// the entry points, see [`trait_method`]): every function in it gets its entry points beside
/// it, as if it had the attribute itself (one that does keeps its own arguments).
fn impl_block(args: TokenStream, mut block: ItemImpl) -> TokenStream {
    let items = std::mem::take(&mut block.items);
    let trait_path = block.trait_.as_ref().map(|(_, path, _)| path.clone());
    let in_trait_impl = trait_path.is_some();
    let inherent = (!in_trait_impl).then(|| emit::Inherent {
        self_ty: (*block.self_ty).clone(),
        generics: block.generics.clone(),
    });
    for item in items {
        let syn::ImplItem::Fn(method) = item else {
            block.items.push(item);
            continue;
        };
        if in_trait_impl && !returns_values(&method.sig) {
            block.items.push(syn::ImplItem::Fn(method));
            continue;
        }
        let (attrs, args) = own_arguments(method.attrs, &args);
        let func = ItemFn {
            attrs,
            vis: method.vis,
            sig: method.sig,
            block: Box::new(method.block),
        };
        let trait_method = trait_path
            .as_ref()
            .map(|path| TraitMethod::new(Some(path), Some(&block.generics), &func));
        // A method of a trait impl under `vmap`: its batched twin, a method the trait declares.
        let twin = trait_path
            .as_ref()
            .and_then(|path| vmap_twin(&args, &func).map(|twin| (path, twin)));
        block.items.push(syn::ImplItem::Verbatim(function(
            args,
            func,
            Host::Impl,
            trait_method,
            inherent.as_ref(),
        )));
        if let Some((path, twin)) = twin {
            let trait_method = TraitMethod::new(Some(path), Some(&block.generics), &twin);
            block.items.push(syn::ImplItem::Verbatim(function(
                TokenStream::new(),
                twin,
                Host::Impl,
                Some(trait_method),
                None,
            )));
        }
    }
    quote!(#block)
}

/// The batched twin of a trait impl's method whose arguments ask for `vmap`
/// (`crate::vmap::impl_twin`); `None` without `vmap`, or when it cannot be batched (the
/// method's own expansion reports why).
fn vmap_twin(args: &TokenStream, func: &ItemFn) -> Option<ItemFn> {
    let mut quiet = Errors::default();
    let options = parse::options(args.clone(), &mut quiet);
    if !options.vmap {
        return None;
    }
    let sig = parse::signature(&mut func.clone(), &options, &mut quiet)?;
    crate::vmap::impl_twin(func, &sig, &mut quiet).filter(|_| quiet.is_empty())
}

/// Whether a method of a trait, or of a trait impl, under `#[differentiable]` returns what a
/// differentiated function can: not nothing, an integer, a `bool`, a string or a reference.
/// The others (`fn width(&self) -> usize`) are left as they are, since the trait declares no
/// entry points for them.
fn returns_values(sig: &syn::Signature) -> bool {
    const CONSTANT: &[&str] = &[
        "bool", "char", "str", "String", "usize", "isize", "u8", "u16", "u32", "u64", "u128", "i8",
        "i16", "i32", "i64", "i128",
    ];
    match &sig.output {
        syn::ReturnType::Default => false,
        syn::ReturnType::Type(_, ty) => match &**ty {
            syn::Type::Reference(_) => false,
            syn::Type::Path(p) => !p
                .path
                .segments
                .last()
                .is_some_and(|s| CONSTANT.iter().any(|c| s.ident == c)),
            _ => true,
        },
    }
}

/// A method's attributes without its own `#[differentiable(..)]`, and the arguments that apply
/// to it: its own, or else the block's `args`.
fn own_arguments(
    mut attrs: Vec<syn::Attribute>,
    args: &TokenStream,
) -> (Vec<syn::Attribute>, TokenStream) {
    let own = attrs.iter().position(|a| {
        a.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "differentiable")
    });
    let args = match own.map(|i| attrs.remove(i).meta) {
        Some(syn::Meta::List(list)) => list.tokens,
        Some(_) => TokenStream::new(),
        None => args.clone(),
    };
    (attrs, args)
}

/// `#[differentiable(args)]` on a trait: every method in it, as if it had the attribute itself.
/// With `dyn` among the arguments, `Box<dyn Trait>` is differentiable too
/// ([`emit::object_items`]).
fn trait_block(args: TokenStream, mut block: ItemTrait) -> TokenStream {
    let (objects, args) = parse::take_dyn(args);
    let objects = objects.is_some();
    let mut errors = Errors::default();
    let written = objects.then(|| block.clone());
    let mut methods = Vec::new();
    let items = std::mem::take(&mut block.items);
    for item in items {
        let syn::TraitItem::Fn(method) = item else {
            block.items.push(item);
            continue;
        };
        if !returns_values(&method.sig) {
            block.items.push(syn::TraitItem::Fn(method));
            continue;
        }
        let (attrs, args) = own_arguments(method.attrs, &args);
        if objects {
            let mut func = ItemFn {
                attrs: Vec::new(),
                vis: syn::Visibility::Inherited,
                sig: method.sig.clone(),
                block: Box::new(syn::parse_quote!({})),
            };
            let options = parse::options(args.clone(), &mut Errors::default());
            if let Some(sig) = parse::signature(&mut func, &options, &mut Errors::default()) {
                // Under `vmap`, the batched twin is one more method a box calls through.
                let quiet = &mut Errors::default();
                let twin = options
                    .vmap
                    .then(|| crate::vmap::trait_items(&func, &sig, quiet))
                    .flatten()
                    .and_then(|(mut twin, _)| {
                        let twin_sig = parse::signature(&mut twin, &Options::default(), quiet)?;
                        Some(emit::ObjectMethod {
                            func: twin,
                            sig: twin_sig,
                        })
                    });
                methods.push(emit::ObjectMethod { func, sig });
                methods.extend(twin);
            }
        }
        let expanded = match method.default {
            Some(body) => {
                let func = ItemFn {
                    attrs,
                    vis: syn::Visibility::Inherited,
                    sig: method.sig,
                    block: Box::new(body),
                };
                let trait_method = TraitMethod::new(None, Some(&block.generics), &func);
                function(args, func, Host::Impl, Some(trait_method), None)
            }
            None => trait_method(args, TraitItemFn { attrs, ..method }, Some(&block.generics)),
        };
        block.items.push(syn::TraitItem::Verbatim(expanded));
    }
    let objects = written.and_then(|written| emit::object_items(&written, &methods, &mut errors));
    if objects.is_some() {
        let object = emit::object_trait(&block.ident);
        let (_, generics, _) = block.generics.split_for_impl();
        block.supertraits.push(syn::parse_quote!(#object #generics));
    }
    let errs = errors.to_compile_errors();
    quote!(#errs #block #objects)
}

/// `#[differentiable(args)]` on a method declared in a trait without a body: the method, and
/// the declarations of the entry points each impl's `#[differentiable]` method writes
/// (`emit::trait_declarations`).
///
/// `trait_generics`: the trait's, known under the attribute on the trait (a generic trait's
/// method needs it there).
fn trait_method(
    args: TokenStream,
    method: TraitItemFn,
    trait_generics: Option<&syn::Generics>,
) -> TokenStream {
    let mut errors = Errors::default();
    let options = parse::options(args, &mut errors);
    if options.custom_vjp.is_some()
        || options.custom_jvp.is_some()
        || options.checkpoint
        || options.hvp
    {
        errors.at(
            &method.sig.ident,
            "a trait's declaration of a method takes no `custom_vjp`, `custom_jvp`, `checkpoint` \
             or `hvp`; give `custom_vjp` and `checkpoint` to the method in each impl",
        );
    }
    let mut func = ItemFn {
        attrs: Vec::new(),
        vis: syn::Visibility::Inherited,
        sig: method.sig.clone(),
        block: Box::new(syn::parse_quote!({})),
    };
    let original = func.clone();
    let sig = parse::signature(&mut func, &Options::default(), &mut errors);
    let declarations = sig
        .as_ref()
        .map(|sig| emit::trait_declarations(&func, sig, trait_generics, &mut errors));
    // Under `vmap`: the batched twin, declared as the method is (each impl's method writes it),
    // and the batched entry points, provided.
    let batched = match (options.vmap, &sig) {
        (true, Some(sig)) => {
            crate::vmap::trait_items(&original, sig, &mut errors).map(|(mut twin, entries)| {
                let twin_sig = parse::signature(&mut twin, &Options::default(), &mut errors);
                let declarations = twin_sig.map(|twin_sig| {
                    emit::trait_declarations(&twin, &twin_sig, trait_generics, &mut errors)
                });
                let (attrs, sig) = (&twin.attrs, &twin.sig);
                quote! {
                    #(#attrs)* #sig;
                    #declarations
                    #entries
                }
            })
        }
        _ => None,
    };
    let unbatched = (!options.vmap).then(|| without_vmap(&method.sig));
    let errs = errors.to_compile_errors();
    quote!(#errs #method #declarations #batched #unbatched)
}

/// A custom rule named like a generated function (`f_vjp` for `f`) would be defined twice.
fn check_rule_names(func: &ItemFn, options: &parse::Options, errors: &mut Errors) {
    let name = func.sig.ident.to_string();
    let generated = ["vjp", "jvp", "grad", "value_and_grad", "pullback", "hvp"];
    for rule in [&options.custom_vjp, &options.custom_jvp]
        .into_iter()
        .flatten()
    {
        let Some(last) = rule.segments.last() else {
            continue;
        };
        if rule.segments.len() == 1
            && generated
                .iter()
                .any(|g| last.ident == format!("{name}_{g}"))
        {
            errors.at(
                rule,
                format!(
                    "`{}` is a name #[differentiable] generates for `{name}`; give the rule \
                     another name (`{name}_rule`, `{name}_tangent_rule`)",
                    last.ident
                ),
            );
        }
    }
}

/// Expands `#[differentiable(args)]` on `func`, whose generated items go to `host`.
/// `trait_method`: what the entry points of a method of a trait or of a trait impl capture and
/// require.
fn function(
    args: TokenStream,
    mut func: ItemFn,
    host: Host,
    trait_method: Option<TraitMethod>,
    inherent: Option<&emit::Inherent>,
) -> TokenStream {
    let mut errors = Errors::default();
    let original = func.clone();
    let options = parse::options(args, &mut errors);
    check_rule_names(&func, &options, &mut errors);
    let sig = parse::signature(&mut func, &options, &mut errors);
    let Some(sig) = sig else {
        let errs = errors.to_compile_errors();
        return quote!(#errs #func);
    };
    if sig.fallible.is_some()
        && (options.custom_vjp.is_some()
            || options.custom_jvp.is_some()
            || options.checkpoint
            || options.hvp
            || options.has_aux)
    {
        errors.at(
            &func.sig.output,
            "a #[differentiable] function returning a `Result` cannot use `custom_vjp`, \
             `custom_jvp`, `checkpoint`, `hvp` or `has_aux` yet",
        );
    }
    // The stages: lower (which reports the errors), then either the numbers stage, or fusion.
    // Calls of batched functions (`g_vmap(Batch(&xs), ..)`) are calls of their twins.
    let block = crate::vmap::batched_calls(&func.block);
    let mut body = lower::lower(&sig, &block, &mut errors);
    let on_numbers = numbers::lower_on_numbers(&sig, &func.block, &options);
    let numbers_only = on_numbers.is_some();
    if let Some(on_numbers) = on_numbers {
        body = on_numbers;
    } else if options.fuses() {
        fuse::fuse(&mut body, false);
    }
    let analysis = analyse::analyse(&body, &mut errors);
    let concrete = concrete_element(&func, &sig);
    if options.hvp {
        check_hvp_option(&func, &sig, &options, concrete.is_some(), &mut errors);
    }
    if options.custom_vjp.is_some() || options.custom_jvp.is_some() {
        for (p, _) in sig.active().filter(|(_, a)| a.array) {
            errors.at(
                &p.ty,
                "`custom_vjp` and `custom_jvp` take tensors and numbers: pass the elements of \
                 an array parameter as numbers (`x0: f64, x1: f64, ..`)",
            );
        }
    }
    let batched = match (options.vmap, &trait_method) {
        (false, _) => TokenStream::new(),
        (true, None) => {
            // `f_hvp_vmap` where `f_hvp` is sure to exist: under `hvp`, or generic over the
            // element type without casting it away (the test `f_hvp` itself makes).
            let casts = sig
                .active()
                .next()
                .is_some_and(|(_, a)| emit::cast_off(&original, &a.elem).is_some());
            let hvp = match (options.hvp, &concrete) {
                (true, _) => Some(true),
                (false, None) if !casts => Some(false),
                _ => None,
            };
            crate::vmap::vmap_items(&original, &sig, hvp, &mut errors)
        }
        // In a trait impl under the attribute on the block, the block writes the twin (see
        // `impl_block`), and the trait provides the batched entry points.
        (true, Some(tm)) if tm.in_impl() => {
            crate::vmap::impl_twin(&original, &sig, &mut errors);
            TokenStream::new()
        }
        // A trait's provided method: its batched twin, provided too (from the method's body,
        // which an impl's own method under `vmap` overrides), and the batched entry points.
        (true, Some(tm)) => {
            let entries = crate::vmap::trait_items(&original, &sig, &mut errors);
            let twin = crate::vmap::impl_twin(&original, &sig, &mut Errors::default());
            match (entries, twin) {
                (Some((_, entries)), Some(twin)) => {
                    let twin = function(TokenStream::new(), twin, host, Some(tm.clone()), None);
                    quote!(#twin #entries)
                }
                _ => TokenStream::new(),
            }
        }
    };
    // (A batched twin `__vmap_f` is itself not under `vmap`, and needs no mark.)
    let twin_of_vmap = func.sig.ident.to_string().starts_with("__vmap_");
    let unbatched =
        (!options.vmap && !twin_of_vmap && trait_method.is_some()).then(|| without_vmap(&func.sig));
    if !errors.is_empty() {
        let errs = errors.to_compile_errors();
        let stubs = emit::place(
            &func,
            host,
            vec![Emitter::stubs(
                &func,
                &sig,
                host,
                trait_method.as_ref(),
                inherent,
            )],
        );
        return quote!(#errs #func #stubs #unbatched);
    }
    let emitter = Emitter {
        func: &func,
        sig: &sig,
        body: &body,
        analysis: &analysis,
        options: &options,
        hvp_twin: concrete.is_some() && options.hvp,
        is_twin: false,
        numbers: numbers_only,
        host,
        trait_method: trait_method.as_ref(),
        inherent,
        regions: Default::default(),
    };
    let mut generated = vec![emitter.emit()];
    // The function itself runs its fused regions too.
    let plain = emitter.plain_body();
    generated.push(emitter.region_items());
    if let (Some(elem), true) = (&concrete, options.hvp) {
        generated.extend(twin::dual_twin(
            &original,
            elem,
            host,
            options.fuses(),
            options.checkpoint,
        ));
    }
    let mut placed = emit::place(&func, host, generated);
    // `f_grad` as a function that callers differentiate (see `emit::grad_function`), beside a
    // free function or a method of an inherent `impl` block under the attribute.
    let site = match (host, inherent) {
        (Host::Free, _) => Some(emit::Site::FREE),
        (Host::Impl, Some(inherent)) if trait_method.is_none() => Some(emit::Site {
            host,
            inherent: Some(inherent),
        }),
        _ => None,
    };
    if let Some(site) = site {
        let twin = emitter.hvp_twin;
        placed.extend(emit::dual_callee(
            &func,
            &sig,
            emit::DualCallee::Vjp,
            twin,
            site,
        ));
        placed.extend(emit::dual_callee(
            &func,
            &sig,
            emit::DualCallee::Hvp,
            twin,
            site,
        ));
        placed.extend(emit::grad_function(&func, &sig, emitter.hvp_twin, site));
        placed.extend(emit::jvp_function(&func, &sig, emitter.hvp_twin, site));
        placed.extend(emit::value_and_grad_function(
            &func,
            &sig,
            emitter.hvp_twin,
            site,
        ));
    }
    if let Some(body) = plain {
        let span = func.block.brace_token.span;
        *func.block = syn::parse_quote_spanned!(span.join() => { #body });
    }
    quote!(#func #placed #batched #unbatched)
}

/// The mark of a trait's method, or of a trait impl's, not under `vmap`: a hidden function
/// `__f_without_vmap` that the trait provides and an impl's method writes. An impl's method
/// without `vmap` overriding one the trait batches would leave the trait's batched twin, from
/// the trait's own body, in place: the trait then has no such function, and the impl's is a
/// compile error at the method ("`__f_without_vmap` is not a member of trait").
fn without_vmap(sig: &syn::Signature) -> TokenStream {
    let name = quote::format_ident!("__{}_without_vmap", sig.ident, span = sig.ident.span());
    quote::quote_spanned! {sig.ident.span()=>
        #[doc(hidden)]
        fn #name() where Self: ::core::marker::Sized {}
    }
}

/// The element type of a function written for a concrete one (`f32`, `f64`), if it is.
fn concrete_element(func: &ItemFn, sig: &Signature) -> Option<syn::Type> {
    let (param, first) = sig.active().find(|(_, a)| !a.structure)?;
    // An array of numbers names its element as a projection; the twin needs the number type.
    let elem = match first.array {
        true => parse::float_element(&param.ty)?,
        false => &first.elem,
    };
    let elem_text = quote!(#elem).to_string();
    let generic = func
        .sig
        .generics
        .type_params()
        .any(|t| t.ident == elem_text);
    (!generic).then(|| elem.clone())
}

/// `hvp` applies to functions on a concrete element type of tensor parameters only.
fn check_hvp_option(
    func: &ItemFn,
    sig: &Signature,
    options: &Options,
    concrete: bool,
    errors: &mut Errors,
) {
    let structure = sig.active().any(|(_, a)| a.structure);
    // (A function whose active parameters are all structures has no element type to read;
    // the error below says what to do.)
    if !concrete && !structure {
        errors.at(
            &func.sig.ident,
            "`hvp` is for functions on a concrete element type; a function generic over its \
             element type (`<T: Element>`) gets `f_hvp` without it",
        );
    }
    if structure {
        errors.at(
            &func.sig.ident,
            "`f_hvp` takes tensor parameters here; make the structure and the function generic \
             over the element type (`Mlp<T: Element>`), whose `f_hvp` takes the structure, or \
             pass its tensors separately",
        );
    }
    if options.custom_vjp.is_some() || options.custom_jvp.is_some() || options.has_aux {
        errors.at(
            &func.sig.ident,
            "`hvp` cannot be combined with `custom_vjp`, `custom_jvp` or `has_aux`",
        );
    }
    // A function of numbers returning several gets no `f_hvp` of its own, but its dual-number
    // twin, which the `f_hvp` of functions calling it runs.
    if !matches!(sig.returns, parse::Returns::Single(_)) && !sig.scalar_out {
        errors.at(
            &func.sig.ident,
            "`f_hvp` needs a function returning one tensor",
        );
    }
}
