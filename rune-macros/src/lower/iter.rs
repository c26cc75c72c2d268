//! Sequences: local `Vec`s of differentiated tensors (lists), and iterator chains over them or
//! over a structure parameter's `Vec`s and maps (`iter`, `values`, `zip`, `enumerate`, `rev`,
//! `skip`, `take`, `step_by`, `map`, `filter`, `take_while`, `skip_while`, `chain`, `windows`,
//! `chunks`), walked by `for` loops, `fold`, `sum`, `product` and `collect`, or read one element
//! at a time (`last`, `nth`, `min_by`, .. in `select`). A map is walked in the order of its keys
//! as the primal map gives them, each part read by key.
//!
//! A chain is a loop over the positions of its last sequence: each adaptor maps a position in
//! the sequence it makes to one in the sequence it adapts (`rev` reverses it, `skip(n)` adds
//! `n`, `step_by(k)` multiplies by `k`), so an element is read by index from its sources, and
//! `enumerate` numbers the positions where it stands. Where that map depends on the elements
//! (`filter`, `take_while`, `skip_while`), the chain up to the adaptor is run as written on the
//! values before the loop, and the positions it keeps are constants (`rune_runtime::sequence`):
//! the derivative follows the elements chosen, as it follows the branch an `if` takes. `chain`
//! and `windows`/`chunks` come first in a chain. This module parses a chain and measures it;
//! `walk` reads its elements and loops over them; `flat` writes `flat_map` as nested loops.

use quote::quote;
use syn::{Expr, Ident};

use crate::ir::{Const, List, Operand, PathSeg, Stmt, Use};
use crate::names::const_ident;

use super::syntax::strip;
use super::{path_tokens, Binding, Lowered, Lowerer};

/// Methods that make an iterator from a sequence or adapt one.
const ITERATOR_METHODS: &[&str] = &[
    "iter",
    "values",
    "into_iter",
    "zip",
    "rev",
    "enumerate",
    "skip",
    "take",
    "step_by",
    "map",
    "cloned",
    "copied",
    "filter",
    "take_while",
    "skip_while",
    "chain",
    "windows",
    "chunks",
    "flat_map",
    "flatten",
];

/// Iterator adaptors not supported over differentiated values: recognised, so that a chain
/// with one is reported as a chain.
const OTHER_ADAPTORS: &[&str] = &[
    "scan",
    "peekable",
    "inspect",
    "cycle",
    "map_while",
    "filter_map",
    "fuse",
    "by_ref",
];

/// What a local `Vec` of differentiated tensors supports.
const LIST_USES: &str = "a `Vec` of differentiated tensors supports `push`, `len`, indexing \
    (`outs[i]`), `for` loops over it (`for h in &outs`), and `stack`/`concat` of it as a whole \
    (`stack(&outs, 0)`)";

/// What a differentiated array parameter supports.
const ARRAY_USES: &str = "a differentiated array of numbers supports `len`, reading its \
    elements by index (`x[i]`), `for` loops over it (`for v in &x`) and iterator chains \
    (`x.iter().map(..).sum()`), and passing it whole to another #[differentiable] function \
    (`norm(&x)`); it cannot be changed or used as a whole otherwise";

/// The error at an iterator chain over differentiated values that `chain_syntax` does not take.
pub(super) const UNSUPPORTED_CHAIN: &str = "this iterator chain over differentiated values is \
    not supported: a chain starts at a sequence (`xs.iter()`, `&xs`, `xs.windows(k)`, \
    `xs.chunks(k)`, `a.iter().chain(&b)`), then adapts it with `zip`, `enumerate`, `rev`, \
    `skip`, `take`, `step_by`, `map`, `filter`, `take_while` or `skip_while`, and ends in a `for` \
    loop, `fold`, `sum`, `product`, `collect::<Vec<_>>()`, or one element read with `.unwrap()` \
    of `last()`, `nth(i)`, `next()`, `find(..)`, `min_by(..)`, `max_by(..)`, `min_by_key(..)` \
    or `max_by_key(..)`; `flat_map` and `flatten`, followed only by `map`, end in a `for` loop, \
    `fold`, `sum`, `product` or `collect`";

/// An iterator chain over sequences (`xs.iter().zip(ys.iter()).enumerate().map(f)`), as
/// written: its sources and its adaptors, innermost first.
struct ChainSyntax {
    /// The sequences walked side by side (one, or more with `zip`).
    sources: Vec<Expr>,
    steps: Vec<ChainStep>,
}

#[derive(Clone)]
pub(super) enum ChainStep {
    /// `.zip(..)` of a source, or of sources zipped together (`.zip(b.iter().zip(c))`).
    Zip(ZipTree),
    Rev,
    Enumerate,
    /// `.skip(n)`, `n` a constant expression.
    Skip(Expr),
    /// `.take(n)`.
    Take(Expr),
    /// `.step_by(k)`.
    StepBy(Expr),
    /// `.map(f)`, `f` a closure or the name of one.
    Map(Expr),
    /// `.filter(f)`, `.take_while(f)` or `.skip_while(f)`: the adaptor's name, its predicate
    /// and the chain it adapts, as written.
    Keep(Keeping, Expr, Box<Expr>),
    /// `.chain(b)` of source `k`, the first step.
    Chain(usize),
    /// `.windows(k)` or `.chunks(k)` of the first source, the first step.
    Slices(Slicing, Expr),
}

/// What a predicate over elements decides.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Keeping {
    Filter,
    TakeWhile,
    SkipWhile,
}

/// How a slice is cut into lists.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Slicing {
    Windows,
    Chunks,
}

/// What a `zip` adds to each element: source `k`'s, or a pair of such.
#[derive(Clone)]
pub(super) enum ZipTree {
    Source(usize),
    Pair(Box<ZipTree>, Box<ZipTree>),
}

impl ZipTree {
    fn offset(self, by: usize) -> Self {
        match self {
            ZipTree::Source(k) => ZipTree::Source(k + by),
            ZipTree::Pair(a, b) => ZipTree::Pair(Box::new(a.offset(by)), Box::new(b.offset(by))),
        }
    }

    pub(super) fn sources(&self, out: &mut Vec<usize>) {
        match self {
            ZipTree::Source(k) => out.push(*k),
            ZipTree::Pair(a, b) => {
                a.sources(out);
                b.sources(out);
            }
        }
    }
}

/// A step as parsed, its zipped sources not yet numbered.
enum ParsedStep {
    Zip(ChainSyntax),
    Chain(ChainSyntax),
    Step(ChainStep),
}

/// Where a chain's elements come from, once evaluated.
pub(super) enum Source {
    /// A `Vec` or array of a structure parameter.
    Structure(usize, Vec<PathSeg>),
    /// A map of a structure parameter, its keys collected before the loop into the local named;
    /// its elements are `(key, part)` pairs, or the parts alone (`values()`).
    Map {
        root: usize,
        path: Vec<PathSeg>,
        keys: Ident,
        values_only: bool,
    },
    List(List),
    /// Constants, collected before the loop into the local named.
    Const(Ident),
}

/// A chain ready to loop over: `0..count` trips.
pub(super) struct Chain {
    pub(super) sources: Vec<Source>,
    pub(super) steps: Vec<ChainStep>,
    /// The length of the sequence each step adapts, then `count`.
    pub(super) lengths: Vec<Const>,
    /// The constant argument of each `skip`, `take` and `step_by`, by step.
    pub(super) args: Vec<Option<Const>>,
    pub(super) count: Const,
}

/// One element of a chain: a value, or a tuple of them (`zip`, `enumerate`).
pub(super) enum Item {
    /// A value; `true` when it is a reference to an element (`iter()` yields references),
    /// which decides how it is passed to other differentiable functions.
    Value(Lowered, bool),
    Tuple(Vec<Item>),
    /// A slice of elements (`windows`, `chunks`), held as a list.
    List(List),
}

impl Lowerer<'_> {
    /// What list `list` supports, for an error at a use it does not.
    pub(super) fn list_uses(&self, list: List) -> &'static str {
        if self.array_param(list).is_some() {
            ARRAY_USES
        } else {
            LIST_USES
        }
    }

    /// `let mut name = Vec::new();` (or `vec![..]`) for a `Vec` that receives differentiated
    /// tensors.
    pub(super) fn define_list(&mut self, name: &Ident, init: &Expr, elems: Vec<Expr>) {
        let list = List(self.lists.len());
        let ident = self.fresh_const_ident(&name.to_string());
        self.lists.push(ident.clone());
        // `[0.0; n]`: an array of numbers, which constant code reads as numbers.
        let repeated = match strip(init) {
            Expr::Repeat(r) => Some((*r.expr).clone()),
            Expr::Macro(m) => super::syntax::vec_repeat(&m.mac).map(|(v, _)| v),
            _ => None,
        };
        if let Some(Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Float(_),
            ..
        })) = repeated.as_ref().map(strip)
        {
            self.number_lists.push(list);
        }
        let init = match strip(init) {
            // `[v; n]` and `vec![v; n]`: `n` copies of a constant, as elements of the list.
            Expr::Repeat(r) => self.filled_list(&r.expr, &r.len),
            // `[a, b]`: its elements are pushed below.
            Expr::Array(_) => quote!(::std::vec::Vec::new()),
            Expr::Macro(m) => match super::syntax::vec_repeat(&m.mac) {
                Some((value, len)) => self.filled_list(&value, &len),
                None => quote!(::std::vec::Vec::new()),
            },
            other => {
                let l = self.rewrite(other);
                self.const_tokens(&l)
            }
        };
        self.stmts.push(Stmt::ListNew {
            list,
            ident,
            init: init.into(),
        });
        self.bind(&name.to_string(), Binding::List(list));
        for e in &elems {
            let l = self.expr(e);
            self.list_push(list, l);
        }
    }

    /// The tokens of a list of `len` copies of the constant `value` (a number or a tensor).
    fn filled_list(&mut self, value: &Expr, len: &Expr) -> proc_macro2::TokenStream {
        if self.mentions_active(value) {
            self.errors.at(
                value,
                "an array of copies of a differentiated value is not supported; write the \
                 elements out (`[a, a]`) or push them",
            );
        }
        let value = self.rewrite(value);
        let value = self.const_tokens(&value);
        let len = self.rewrite(len);
        let len = self.const_tokens(&len);
        quote!(::std::vec![::rune_ad::__private::list_element(#value); #len])
    }

    pub(super) fn list_push(&mut self, list: List, value: Lowered) {
        let ident = &self.lists[list.0];
        let index = self.hoist(quote!(#ident.len()), Some(quote!(usize)), Use::Plain);
        let val = self.list_operand(value);
        self.stmts.push(Stmt::ListPush {
            list,
            val,
            index,
            replace: false,
        });
    }

    /// `list[index] = value`, `list` a local list.
    pub(super) fn list_set(&mut self, list: List, index: Const, value: Lowered) {
        let val = self.list_operand(value);
        self.stmts.push(Stmt::ListPush {
            list,
            val,
            index,
            replace: true,
        });
    }

    /// A value as an element of a list: a constant number becomes a tensor.
    fn list_operand(&mut self, value: Lowered) -> Operand {
        match value {
            Lowered::Val(v) => Operand::Val(v),
            Lowered::Const { tokens, .. } => Operand::Const(self.hoist(
                quote!(::rune_ad::__private::list_element(#tokens)),
                None,
                Use::Plain,
            )),
        }
    }

    /// `list[index]` as a differentiated value.
    pub(super) fn list_get(&mut self, list: List, index: Const) -> Lowered {
        if let Some((_, root, path, first)) = self.windows.iter().find(|w| w.0 == list).cloned() {
            let (i, first) = (const_ident(index), const_ident(first));
            let at = self.hoist(quote!(#first + #i), Some(quote!(usize)), Use::Plain);
            let mut path = path;
            path.push(PathSeg::Index(at));
            return Lowered::Val(self.leaf(root, path));
        }
        let out = self.new_val();
        self.stmts.push(Stmt::ListGet { out, list, index });
        Lowered::Val(out)
    }

    /// The list an expression stands for as a whole: `outs`, `&outs`, `outs.iter()`,
    /// `outs.iter().collect::<Vec<_>>()`, `outs.as_slice()`, `&outs[..]`.
    pub(super) fn list_of(&self, e: &Expr) -> Option<List> {
        match strip(e) {
            Expr::Reference(r) => self.list_of(&r.expr),
            Expr::Path(p) => match self.lookup(&p.path.get_ident()?.to_string()) {
                Some(Binding::List(l)) => Some(*l),
                _ => None,
            },
            Expr::MethodCall(mc)
                if mc.args.is_empty()
                    && ["iter", "into_iter", "collect", "as_slice", "cloned"]
                        .contains(&mc.method.to_string().as_str()) =>
            {
                self.list_of(&mc.receiver)
            }
            Expr::Index(ix) if matches!(strip(&ix.index), Expr::Range(r) if r.start.is_none() && r.end.is_none()) => {
                self.list_of(&ix.expr)
            }
            _ => None,
        }
    }

    /// `e` as an iterator chain over sequences, when it is one.
    fn chain_syntax(e: &Expr) -> Option<ChainSyntax> {
        let mut parsed = Vec::new();
        let mut current = e;
        let base = loop {
            match strip(current) {
                Expr::MethodCall(mc) => {
                    let method = mc.method.to_string();
                    let arg = || mc.args[0].clone();
                    match (method.as_str(), mc.args.len()) {
                        ("iter" | "into_iter" | "cloned" | "copied", 0) => {}
                        ("rev", 0) => parsed.push(ParsedStep::Step(ChainStep::Rev)),
                        ("enumerate", 0) => parsed.push(ParsedStep::Step(ChainStep::Enumerate)),
                        ("skip", 1) => parsed.push(ParsedStep::Step(ChainStep::Skip(arg()))),
                        ("take", 1) => parsed.push(ParsedStep::Step(ChainStep::Take(arg()))),
                        ("step_by", 1) => {
                            parsed.push(ParsedStep::Step(ChainStep::StepBy(arg())));
                        }
                        ("map", 1) => parsed.push(ParsedStep::Step(ChainStep::Map(arg()))),
                        // A map's parts: the source itself, read by key.
                        ("values", 0) => break Expr::MethodCall(mc.clone()),
                        ("filter" | "take_while" | "skip_while", 1) => {
                            let keeping = match method.as_str() {
                                "filter" => Keeping::Filter,
                                "take_while" => Keeping::TakeWhile,
                                _ => Keeping::SkipWhile,
                            };
                            let step = ChainStep::Keep(keeping, arg(), mc.receiver.clone());
                            parsed.push(ParsedStep::Step(step));
                        }
                        ("windows" | "chunks", 1) => {
                            let slicing = match method.as_str() {
                                "windows" => Slicing::Windows,
                                _ => Slicing::Chunks,
                            };
                            parsed.push(ParsedStep::Step(ChainStep::Slices(slicing, arg())));
                        }
                        ("chain", 1) => {
                            let other = Self::chain_syntax(&mc.args[0])?;
                            // What is chained on is a sequence as a whole.
                            if !other.steps.is_empty() {
                                return None;
                            }
                            parsed.push(ParsedStep::Chain(other));
                        }
                        ("zip", 1) => {
                            let other = Self::chain_syntax(&mc.args[0])?;
                            // A zipped chain may zip sources of its own, nothing else.
                            if !other.steps.iter().all(|s| matches!(s, ChainStep::Zip(_))) {
                                return None;
                            }
                            parsed.push(ParsedStep::Zip(other));
                        }
                        _ => return None,
                    }
                    current = &mc.receiver;
                }
                Expr::Reference(r) => {
                    current = &r.expr;
                }
                other => break other.clone(),
            }
        };
        // Collected outermost first; sources are numbered innermost first.
        parsed.reverse();
        let mut sources = vec![base];
        let mut steps = Vec::new();
        for (j, step) in parsed.into_iter().enumerate() {
            // `chain`, `windows` and `chunks` start a chain.
            if j > 0
                && matches!(
                    step,
                    ParsedStep::Chain(_) | ParsedStep::Step(ChainStep::Slices(..))
                )
            {
                return None;
            }
            steps.push(match step {
                ParsedStep::Step(step) => step,
                ParsedStep::Chain(other) => {
                    sources.extend(other.sources);
                    ChainStep::Chain(sources.len() - 1)
                }
                ParsedStep::Zip(other) => {
                    let offset = sources.len();
                    let mut tree = ZipTree::Source(0);
                    for step in other.steps {
                        if let ChainStep::Zip(t) = step {
                            tree = ZipTree::Pair(Box::new(tree), Box::new(t));
                        }
                    }
                    sources.extend(other.sources);
                    ChainStep::Zip(tree.offset(offset))
                }
            });
        }
        Some(ChainSyntax { sources, steps })
    }

    /// Whether `e` ends in an iterator method (`xs.iter()`, `.zip(..)`, `.map(..)`): what
    /// `fold`, `sum` and `collect` are called on.
    pub(super) fn is_iterator(e: &Expr) -> bool {
        matches!(strip(e), Expr::MethodCall(mc) if {
            let method = mc.method.to_string();
            ITERATOR_METHODS.contains(&method.as_str()) || OTHER_ADAPTORS.contains(&method.as_str())
        })
    }

    /// The chain `e` walks, evaluated where the loop starts, when it walks differentiated
    /// values (a structure's `Vec`, a list) or maps with a closure that reads them; `None` for
    /// constant iteration.
    pub(super) fn chain(&mut self, e: &Expr) -> Option<Chain> {
        if let Some(inlined) = self.inline_iter(e) {
            return self.chain(&inlined);
        }
        let Some(syntax) = Self::chain_syntax(e) else {
            if Self::is_iterator(e) && self.mentions_active(e) {
                match unsupported_step(e) {
                    Some(method) => self.errors.at(
                        method,
                        format!("`{method}` is not supported here; {UNSUPPORTED_CHAIN}"),
                    ),
                    None => self.errors.at(e, UNSUPPORTED_CHAIN),
                }
            }
            return None;
        };
        let walks_active = syntax.sources.iter().any(|s| {
            self.list_of(s).is_some() || (self.mentions_active(s) && self.structure_source(s))
        }) || syntax.steps.iter().any(|s| match s {
            ChainStep::Map(f) => self.mentions_active(f),
            _ => false,
        });
        if !walks_active {
            return None;
        }
        let mut sources = Vec::new();
        let mut lengths = Vec::new();
        for src in &syntax.sources {
            if let Some(list) = self.list_of(src) {
                let ident = &self.lists[list.0];
                lengths.push(quote!(#ident.len()));
                sources.push(Source::List(list));
                continue;
            }
            let (values_only, src) = match strip(src) {
                Expr::MethodCall(mc)
                    if mc.method == "values"
                        && mc.args.is_empty()
                        && self.structure_source(&mc.receiver) =>
                {
                    (true, &*mc.receiver)
                }
                _ => (false, src),
            };
            match self.expr(src) {
                Lowered::Val(v) if values_only || self.is_map_root(v) => {
                    let Some((root, path)) = self.paths.get(&v).cloned() else {
                        self.errors.at(src, super::MAP_USES);
                        return None;
                    };
                    let base = path_tokens(&self.roots[root], &path);
                    let keys = self.fresh_const_ident("keys");
                    self.stmts.push(Stmt::Verbatim(
                        quote! {
                            let #keys: ::std::vec::Vec<_> = (&#base).keys().collect();
                        }
                        .into(),
                    ));
                    lengths.push(quote!(#keys.len()));
                    sources.push(Source::Map {
                        root,
                        path,
                        keys,
                        values_only,
                    });
                }
                Lowered::Val(v) if self.paths.contains_key(&v) => {
                    let (root, path) = self.paths[&v].clone();
                    let base = path_tokens(&self.roots[root], &path);
                    lengths.push(quote!((&#base).len()));
                    sources.push(Source::Structure(root, path));
                }
                Lowered::Val(_) => {
                    self.errors.at(
                        src,
                        "a loop cannot iterate over a differentiated tensor; loop over indices \
                         (`for i in 0..n`) and select with ops such as `shrink` or `gather`",
                    );
                    return None;
                }
                Lowered::Const { tokens, .. } => {
                    let ident = self.fresh_const_ident("elements");
                    self.stmts.push(Stmt::Verbatim(
                        quote! {
                            let #ident: ::std::vec::Vec<_> =
                                ::core::iter::IntoIterator::into_iter(#tokens).collect();
                        }
                        .into(),
                    ));
                    lengths.push(quote!(#ident.len()));
                    sources.push(Source::Const(ident));
                }
            }
        }
        // The length of each step's sequence: what it adapts, then what it makes.
        let usize_ty = || Some(quote!(usize));
        let mut len = self.hoist(lengths[0].clone(), usize_ty(), Use::Plain);
        let mut step_lengths = Vec::new();
        let mut args = Vec::new();
        for step in &syntax.steps {
            step_lengths.push(len);
            let n = const_ident(len);
            let (arg, next) = match step {
                ChainStep::Zip(tree) => {
                    let mut ks = Vec::new();
                    tree.sources(&mut ks);
                    let others = ks.iter().map(|&k| &lengths[k]);
                    (None, Some(quote!(#n #(.min(#others))*)))
                }
                ChainStep::Skip(e) | ChainStep::Take(e) | ChainStep::StepBy(e) => {
                    let a = self.chain_arg(e)?;
                    let k = const_ident(a);
                    let next = match step {
                        ChainStep::Skip(_) => quote!(#n.saturating_sub(#k)),
                        ChainStep::Take(_) => quote!(::core::cmp::min(#n, #k)),
                        _ => quote!(#n.div_ceil(#k)),
                    };
                    (Some(a), Some(next))
                }
                ChainStep::Keep(keeping, f, prefix) => {
                    let prefix = self.rewrite(prefix);
                    let prefix = self.const_tokens(&prefix);
                    let f = self.rewrite(f);
                    let f = self.const_tokens(&f);
                    let rt = quote!(::rune_ad::__private);
                    let (value, ty) = match keeping {
                        Keeping::Filter => (
                            quote!(#rt::filter_positions(#prefix, #f)),
                            quote!(::std::vec::Vec<usize>),
                        ),
                        _ => (quote!(#rt::count_while(#prefix, #f)), quote!(usize)),
                    };
                    let a = self.hoist(value, Some(ty), Use::Plain);
                    let k = const_ident(a);
                    let next = match keeping {
                        Keeping::Filter => quote!(#k.len()),
                        Keeping::TakeWhile => quote!(#k),
                        Keeping::SkipWhile => quote!(#n - #k),
                    };
                    (Some(a), Some(next))
                }
                ChainStep::Chain(k) => {
                    let other = &lengths[*k];
                    (None, Some(quote!(#n + #other)))
                }
                ChainStep::Slices(slicing, e) => {
                    let size = self.chain_arg(e)?;
                    let (k, name) = match slicing {
                        Slicing::Windows => (const_ident(size), "windows"),
                        Slicing::Chunks => (const_ident(size), "chunks"),
                    };
                    let checked = self.hoist(
                        quote!(::rune_ad::__private::window_size(#k, #name)),
                        usize_ty(),
                        Use::Plain,
                    );
                    let k = const_ident(checked);
                    let next = match slicing {
                        Slicing::Windows => quote!(#n.saturating_sub(#k - 1)),
                        Slicing::Chunks => quote!(#n.div_ceil(#k)),
                    };
                    (Some(checked), Some(next))
                }
                _ => (None, None),
            };
            args.push(arg);
            if let Some(next) = next {
                len = self.hoist(next, usize_ty(), Use::Plain);
            }
        }
        step_lengths.push(len);
        Some(Chain {
            sources,
            steps: syntax.steps,
            lengths: step_lengths,
            args,
            count: len,
        })
    }

    /// Whether a chain's source names (part of) a structure parameter.
    pub(super) fn structure_source(&self, e: &Expr) -> bool {
        let mut base = strip(e);
        // A call's result is a structure when a part of it is read (`&g.layers`).
        let mut part = false;
        loop {
            match base {
                Expr::Field(f) => {
                    part = true;
                    base = strip(&f.base);
                }
                Expr::Index(ix) => base = strip(&ix.expr),
                Expr::Reference(r) => base = strip(&r.expr),
                Expr::MethodCall(mc) if mc.method == "values" && mc.args.is_empty() => {
                    base = strip(&mc.receiver);
                }
                Expr::Path(p) => {
                    return p.path.get_ident().is_some_and(|i| {
                        self.roots.iter().any(|r| r == i)
                            || matches!(
                                self.lookup(&i.to_string()),
                                Some(Binding::Active(v, _)) if self.paths.contains_key(v)
                                    || (part && self.call_outs.contains(v))
                            )
                    })
                }
                _ => return false,
            }
        }
    }

    /// The constant argument of `skip`, `take` or `step_by`.
    fn chain_arg(&mut self, e: &Expr) -> Option<Const> {
        match self.expr(e) {
            Lowered::Const { tokens, .. } => {
                Some(self.hoist(quote!(#tokens), Some(quote!(usize)), Use::Plain))
            }
            Lowered::Val(_) => {
                self.errors.at(
                    e,
                    "the argument of `skip`, `take`, `step_by`, `windows` and `chunks` must be a \
                     constant count",
                );
                None
            }
        }
    }
}

/// The innermost method of an iterator chain that `chain_syntax` takes nowhere, for the error
/// at a chain it refuses.
fn unsupported_step(e: &Expr) -> Option<&Ident> {
    let Expr::MethodCall(mc) = strip(e) else {
        return None;
    };
    if let Some(inner) = unsupported_step(&mc.receiver) {
        return Some(inner);
    }
    let method = mc.method.to_string();
    let taken = ITERATOR_METHODS.contains(&method.as_str())
        && !matches!(method.as_str(), "flat_map" | "flatten");
    (!taken).then_some(&mc.method)
}
