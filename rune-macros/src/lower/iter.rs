//! Sequences: local `Vec`s of differentiated tensors (lists), and iterator chains over them or
//! over a structure parameter's `Vec`s and maps (`iter`, `values`, `zip`, `enumerate`, `rev`,
//! `skip`, `take`, `step_by`, `map`), walked by `for` loops, `fold`, `sum`, `product` and
//! `collect`. A map is walked in the order of its keys as the primal map gives them, each part
//! read by key.
//!
//! A chain is a loop over the positions of its last sequence: each adaptor maps a position in
//! the sequence it makes to one in the sequence it adapts (`rev` reverses it, `skip(n)` adds
//! `n`, `step_by(k)` multiplies by `k`), so an element is read by index from its sources, and
//! `enumerate` numbers the positions where it stands.

use proc_macro2::Span;
use quote::{quote, quote_spanned, ToTokens};
use syn::{Expr, Ident};

use crate::ir::{Const, List, LoopHead, Operand, PathSeg, Stmt, Use};
use crate::names::{const_ident, hidden};
use crate::ops::{self, Form};

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

/// An iterator chain over sequences (`xs.iter().zip(ys.iter()).enumerate().map(f)`), as
/// written: its sources and its adaptors, innermost first.
struct ChainSyntax {
    /// The sequences walked side by side (one, or more with `zip`).
    sources: Vec<Expr>,
    steps: Vec<ChainStep>,
}

#[derive(Clone)]
enum ChainStep {
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
}

/// What a `zip` adds to each element: source `k`'s, or a pair of such.
#[derive(Clone)]
enum ZipTree {
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

    fn sources(&self, out: &mut Vec<usize>) {
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
    Step(ChainStep),
}

/// Where a chain's elements come from, once evaluated.
enum Source {
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
    sources: Vec<Source>,
    steps: Vec<ChainStep>,
    /// The length of the sequence each step adapts, then `count`.
    lengths: Vec<Const>,
    /// The constant argument of each `skip`, `take` and `step_by`, by step.
    args: Vec<Option<Const>>,
    pub(super) count: Const,
}

/// One element of a chain: a value, or a tuple of them (`zip`, `enumerate`).
pub(super) enum Item {
    /// A value; `true` when it is a reference to an element (`iter()` yields references),
    /// which decides how it is passed to other differentiable functions.
    Value(Lowered, bool),
    Tuple(Vec<Item>),
}

impl Lowerer<'_> {
    /// What list `list` supports, for an error at a use it does not.
    pub(super) fn list_uses(&self, list: List) -> &'static str {
        if self.arrays.contains(&list) {
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
        let init = match strip(init) {
            Expr::Macro(_) => quote!(::std::vec::Vec::new()),
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

    pub(super) fn list_push(&mut self, list: List, value: Lowered) {
        let ident = &self.lists[list.0];
        let index = self.hoist(quote!(#ident.len()), Some(quote!(usize)), Use::Plain);
        let val = match value {
            Lowered::Val(v) => Operand::Val(v),
            Lowered::Const { tokens, .. } => Operand::Const(self.hoist(tokens, None, Use::Plain)),
        };
        self.stmts.push(Stmt::ListPush { list, val, index });
    }

    /// `list[index]` as a differentiated value.
    pub(super) fn list_get(&mut self, list: List, index: Const) -> Lowered {
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
        for step in parsed {
            steps.push(match step {
                ParsedStep::Step(step) => step,
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
        matches!(strip(e), Expr::MethodCall(mc) if ITERATOR_METHODS.contains(&mc.method.to_string().as_str()))
    }

    /// The chain `e` walks, evaluated where the loop starts, when it walks differentiated
    /// values (a structure's `Vec`, a list) or maps with a closure that reads them; `None` for
    /// constant iteration.
    pub(super) fn chain(&mut self, e: &Expr) -> Option<Chain> {
        let syntax = Self::chain_syntax(e)?;
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
        loop {
            match base {
                Expr::Field(f) => base = strip(&f.base),
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
                    "the argument of `skip`, `take` and `step_by` must be a constant count",
                );
                None
            }
        }
    }

    /// The element of trip `trip` of a chain's loop (inside its body).
    pub(super) fn chain_item(&mut self, chain: &Chain, trip: &Ident) -> Item {
        // The position in each step's sequence, from the last one (the trip) back to the
        // sources'.
        let steps = chain.steps.len();
        let mut positions = vec![None; steps + 1];
        let mut position = self.hoist(quote!(#trip), Some(quote!(usize)), Use::Plain);
        positions[steps] = Some(position);
        for (j, step) in chain.steps.iter().enumerate().rev() {
            let p = const_ident(position);
            let before = match step {
                ChainStep::Rev => {
                    let n = const_ident(chain.lengths[j]);
                    Some(quote!(#n - 1 - #p))
                }
                ChainStep::Skip(_) | ChainStep::StepBy(_) => {
                    let k = const_ident(chain.args[j].expect("a counted step"));
                    Some(match step {
                        ChainStep::Skip(_) => quote!(#p + #k),
                        _ => quote!(#p * #k),
                    })
                }
                _ => None,
            };
            if let Some(before) = before {
                position = self.hoist(before, Some(quote!(usize)), Use::Plain);
            }
            positions[j] = Some(position);
        }
        let at = |j: usize| positions[j].expect("every position is set");
        let mut item = self.chain_element(chain, 0, at(0));
        for (j, step) in chain.steps.iter().enumerate() {
            item = match step {
                ChainStep::Zip(tree) => Item::Tuple(vec![item, self.zipped(chain, tree, at(j))]),
                ChainStep::Enumerate => {
                    let i = const_ident(at(j));
                    Item::Tuple(vec![
                        Item::Value(Lowered::constant(quote!(#i)), false),
                        item,
                    ])
                }
                ChainStep::Map(f) => self.apply_fn(f, vec![item]),
                ChainStep::Rev | ChainStep::Skip(_) | ChainStep::Take(_) | ChainStep::StepBy(_) => {
                    item
                }
            };
        }
        item
    }

    /// Element `index` of source `k` of a chain.
    fn chain_element(&mut self, chain: &Chain, k: usize, index: Const) -> Item {
        let by_ref = !matches!(chain.sources[k], Source::Const(_));
        let value = match &chain.sources[k] {
            Source::Structure(root, path) => {
                let mut path = path.clone();
                path.push(PathSeg::Index(index));
                Lowered::Val(self.leaf(*root, path))
            }
            Source::Map {
                root,
                path,
                keys,
                values_only,
            } => {
                let i = const_ident(index);
                let key = self.hoist(quote!(#keys[#i]), None, Use::Plain);
                let mut path = path.clone();
                path.push(PathSeg::Key(key));
                let part = Item::Value(Lowered::Val(self.leaf(*root, path)), true);
                if *values_only {
                    return part;
                }
                let key = const_ident(key);
                return Item::Tuple(vec![
                    Item::Value(Lowered::constant(quote!(#key)), false),
                    part,
                ]);
            }
            Source::List(list) => self.list_get(*list, index),
            Source::Const(ident) => {
                let i = const_ident(index);
                Lowered::constant(quote!(::core::clone::Clone::clone(&#ident[#i])))
            }
        };
        Item::Value(value, by_ref)
    }

    /// The elements `index` of the sources a `zip` adds, in its pairs.
    fn zipped(&mut self, chain: &Chain, tree: &ZipTree, index: Const) -> Item {
        match tree {
            ZipTree::Source(k) => self.chain_element(chain, *k, index),
            ZipTree::Pair(a, b) => Item::Tuple(vec![
                self.zipped(chain, a, index),
                self.zipped(chain, b, index),
            ]),
        }
    }

    /// `chain.fold(init, f)` (`f` is `Ok`), `chain.sum()` and `chain.product()` (`Err` of the
    /// operator's op, `add` or `mul`) over differentiated elements: a loop carrying the
    /// accumulator in a slot.
    pub(super) fn fold_chain(
        &mut self,
        chain: Chain,
        init: Lowered,
        f: Result<&Expr, &'static str>,
        span: Span,
    ) -> Lowered {
        let slot = self.new_slot();
        let init = self.operand(init, Use::Plain);
        self.stmts.push(Stmt::SlotInit { slot, init });
        self.chain_loop(&chain, |l, item| {
            let out = l.new_val();
            l.stmts.push(Stmt::SlotRead { out, slot });
            let acc = Lowered::Val(out);
            let next = match f {
                Ok(f) => match l.apply_fn(f, vec![Item::Value(acc, false), item]) {
                    Item::Value(v, _) => v,
                    Item::Tuple(_) => {
                        l.errors
                            .at(f, "the accumulator of `fold` here must be one tensor");
                        return;
                    }
                },
                Err(op) => match item {
                    Item::Value(v, _) => {
                        let op = ops::lookup(op, Form::Operator).expect("in the table");
                        l.binary_op(op, acc, v, span)
                    }
                    Item::Tuple(_) => {
                        l.errors.at(
                            quote_spanned!(span=> sum),
                            "`sum` and `product` need one tensor per element; `map` the tuple to \
                             one first",
                        );
                        return;
                    }
                },
            };
            let val = l.operand(next, Use::Plain);
            l.stmts.push(Stmt::SlotWrite { slot, val });
        });
        let out = self.new_val();
        self.stmts.push(Stmt::SlotRead { out, slot });
        Lowered::Val(out)
    }

    /// `chain.collect::<Vec<_>>()` of differentiated elements into the list `list`.
    fn collect_chain(&mut self, chain: Chain, list: List, at: &Expr) {
        self.chain_loop(&chain, |l, item| match item {
            Item::Value(v, _) => l.list_push(list, v),
            Item::Tuple(_) => l.errors.at(
                at,
                "only a `Vec` of tensors can be collected here; `map` the tuple to one tensor",
            ),
        });
    }

    /// A loop over a chain's elements whose body `body` lowers from each element (for `fold`,
    /// `sum` and `collect`, which neither `break` nor `continue`).
    fn chain_loop(&mut self, chain: &Chain, body: impl FnOnce(&mut Self, Item)) {
        let id = self.new_region();
        let trip = hidden(&format!("item{id}"));
        let n = const_ident(chain.count);
        let stmts = self.region(|l| {
            let item = l.chain_item(chain, &trip);
            body(l, item);
        });
        self.stmts.push(Stmt::Loop {
            id,
            head: LoopHead::For {
                pattern: trip.into_token_stream().into(),
                iter: quote!(0..#n).into(),
            },
            body: stmts,
        });
    }

    /// A new list holding what `e` (an iterator chain ending in `.collect()`) collects, when
    /// its elements are differentiated.
    pub(super) fn collected_list(&mut self, e: &Expr, name: &str) -> Option<List> {
        let Expr::MethodCall(mc) = strip(e) else {
            return None;
        };
        if mc.method != "collect" || !mc.args.is_empty() || !Self::is_iterator(&mc.receiver) {
            return None;
        }
        let chain = self.chain(&mc.receiver)?;
        let list = List(self.lists.len());
        let ident = self.fresh_const_ident(name);
        self.lists.push(ident.clone());
        self.stmts.push(Stmt::ListNew {
            list,
            ident,
            init: quote!(::std::vec::Vec::new()).into(),
        });
        self.collect_chain(chain, list, e);
        Some(list)
    }
}
