//! Form-level rewrites of the threading and conditional macros into core forms.
//! They run before analysis, so errors still point at the user's source spans.

use ptc_lisp_syntax::{Form, FormKind, Span};

use crate::error::{ErrorKind, EvalError};

type R<T> = Result<T, EvalError>;

/// A symbol form.
pub(crate) fn sym(name: &str, span: Span) -> Form {
    Form::new(FormKind::Symbol { ns: None, name: name.to_string() }, span)
}

/// A list form.
pub(crate) fn list(items: Vec<Form>, span: Span) -> Form {
    Form::new(FormKind::List(items), span)
}

/// A vector form.
pub(crate) fn vector(items: Vec<Form>, span: Span) -> Form {
    Form::new(FormKind::Vector(items), span)
}

fn invalid(msg: impl Into<String>, span: Span) -> EvalError {
    EvalError::new(ErrorKind::InvalidForm, msg).at(span)
}

/// Inserts `x` into `step` as first (`->`) or last (`->>`) argument.
fn thread_step(x: Form, step: &Form, last: bool) -> R<Form> {
    match &step.kind {
        FormKind::List(items) if !items.is_empty() => {
            let mut items = items.clone();
            if last {
                items.push(x);
            } else {
                items.insert(1, x);
            }
            Ok(list(items, step.span))
        }
        FormKind::List(_) => Err(invalid("cannot thread through an empty list ()", step.span)),
        FormKind::Symbol { .. } | FormKind::Keyword(_) | FormKind::ShortFn(_) | FormKind::Map(_) | FormKind::Set(_) => {
            Ok(list(vec![step.clone(), x], step.span))
        }
        _ => Err(invalid(
            format!(
                "cannot thread through {}; each step must be a function call like (f arg) or a function name",
                ptc_lisp_syntax::print_form(step)
            ),
            step.span,
        )),
    }
}

/// `(-> x f (g a))` and `(->> x f (g a))`.
/// Most steps a threading or cond form may have (each step nests one level deeper).
const MAX_STEPS: usize = 512;

fn check_steps(name: &str, steps: usize, span: Span) -> R<()> {
    if steps > MAX_STEPS {
        return Err(EvalError::new(
            ErrorKind::InvalidForm,
            format!("{name} has {steps} steps, more than {MAX_STEPS}; split it with let or def into shorter pipelines"),
        )
        .at(span));
    }
    Ok(())
}

pub(crate) fn thread(args: &[Form], last: bool, span: Span) -> R<Form> {
    check_steps(if last { "->>" } else { "->" }, args.len(), span)?;
    let Some((first, steps)) = args.split_first() else {
        return Err(invalid(
            format!(
                "{} needs an initial value: ({} x (f) ...)",
                if last { "->>" } else { "->" },
                if last { "->>" } else { "->" }
            ),
            span,
        ));
    };
    let mut acc = first.clone();
    for s in steps {
        acc = thread_step(acc, s, last)?;
    }
    Ok(acc)
}

/// `(as-> x name f1 f2)` -> `(let [name x name f1 name f2] name)`.
pub(crate) fn as_thread(args: &[Form], span: Span) -> R<Form> {
    check_steps("as->", args.len(), span)?;
    if args.len() < 2 {
        return Err(invalid("as-> needs a value and a name: (as-> x v (f v) (g v))", span));
    }
    let name = &args[1];
    if name.as_plain_symbol().is_none() {
        return Err(invalid("as-> needs a symbol as its second argument: (as-> x v (f v))", name.span));
    }
    let mut bindings = vec![name.clone(), args[0].clone()];
    for step in &args[2..] {
        bindings.push(name.clone());
        bindings.push(step.clone());
    }
    Ok(list(vec![sym("let", span), vector(bindings, span), name.clone()], span))
}

/// `(cond-> x test step ...)` / `cond->>`: steps applied when their test is truthy.
pub(crate) fn cond_thread(args: &[Form], last: bool, span: Span, gensym: &mut dyn FnMut() -> String) -> R<Form> {
    check_steps(if last { "cond->>" } else { "cond->" }, args.len() / 2, span)?;
    let name = if last { "cond->>" } else { "cond->" };
    let Some((first, pairs)) = args.split_first() else {
        return Err(invalid(format!("{name} needs an initial value: ({name} x test (f) ...)"), span));
    };
    if pairs.len() % 2 != 0 {
        return Err(invalid(
            format!("{name} needs test/step pairs after the initial value; the last test has no step"),
            span,
        ));
    }
    let g = gensym();
    let mut bindings = vec![sym(&g, span), first.clone()];
    for pair in pairs.chunks(2) {
        let stepped = thread_step(sym(&g, span), &pair[1], last)?;
        let if_form = list(vec![sym("if", span), pair[0].clone(), stepped, sym(&g, span)], span);
        bindings.push(sym(&g, span));
        bindings.push(if_form);
    }
    Ok(list(vec![sym("let", span), vector(bindings, span), sym(&g, span)], span))
}

/// `(some-> x f g)`: stops at the first nil.
pub(crate) fn some_thread(args: &[Form], last: bool, span: Span, gensym: &mut dyn FnMut() -> String) -> R<Form> {
    check_steps(if last { "some->>" } else { "some->" }, args.len(), span)?;
    let name = if last { "some->>" } else { "some->" };
    let Some((first, steps)) = args.split_first() else {
        return Err(invalid(format!("{name} needs an initial value: ({name} x (f) ...)"), span));
    };
    // build from the inside out
    fn build(acc: Form, steps: &[Form], last: bool, span: Span, gensym: &mut dyn FnMut() -> String) -> R<Form> {
        let Some((step, rest)) = steps.split_first() else {
            return Ok(acc);
        };
        let g = gensym();
        let stepped = thread_step(sym(&g, span), step, last)?;
        let inner = build(stepped, rest, last, span, gensym)?;
        Ok(list(
            vec![
                sym("let", span),
                vector(vec![sym(&g, span), acc], span),
                list(
                    vec![
                        sym("if", span),
                        list(vec![sym("nil?", span), sym(&g, span)], span),
                        Form::new(FormKind::Nil, span),
                        inner,
                    ],
                    span,
                ),
            ],
            span,
        ))
    }
    build(first.clone(), steps, last, span, gensym)
}

/// `(cond t1 e1 t2 e2 ...)` -> nested ifs.
pub(crate) fn cond(args: &[Form], span: Span) -> R<Form> {
    check_steps("cond", args.len() / 2, span)?;
    if !args.len().is_multiple_of(2) {
        return Err(EvalError::new(
            ErrorKind::InvalidForm,
            "cond needs test/expression pairs; the last test has no expression (use :else as the final test)",
        )
        .at(span));
    }
    let mut acc = Form::new(FormKind::Nil, span);
    for pair in args.chunks(2).rev() {
        acc = list(vec![sym("if", span), pair[0].clone(), pair[1].clone(), acc], pair[0].span);
    }
    Ok(acc)
}

/// `(condp pred expr t1 r1 ... default?)`; a clause `t :>> f` calls f with the test's
/// result. Without a default, no matching clause is a runtime error, as in Clojure.
pub(crate) fn condp(args: &[Form], span: Span, gensym: &mut dyn FnMut() -> String) -> R<Form> {
    check_steps("condp", args.len() / 2, span)?;
    if args.len() < 2 {
        return Err(invalid("condp needs a predicate and an expression: (condp = x 1 :one 2 :two :default)", span));
    }
    let p = gensym();
    let e = gensym();
    // (test, result, result is a :>> function)
    let mut clauses: Vec<(&Form, &Form, bool)> = Vec::new();
    let mut rest = &args[2..];
    let default = loop {
        match rest {
            [] => break None,
            [only] => break Some(only.clone()),
            [t, Form { kind: FormKind::Keyword(k), .. }, f, more @ ..] if k == ">>" => {
                clauses.push((t, f, true));
                rest = more;
            }
            [t, Form { kind: FormKind::Keyword(k), span: at }] if k == ">>" => {
                let _ = t;
                return Err(invalid("condp: :>> must be followed by a function of the test's result", *at));
            }
            [t, r, more @ ..] => {
                clauses.push((t, r, false));
                rest = more;
            }
        }
    };
    let mut acc = default.unwrap_or_else(|| {
        raise("condp: no clause matched the expression and there is no default; add a default as the last form", span)
    });
    for (t, r, arrow) in clauses.into_iter().rev() {
        let test = list(vec![sym(&p, span), t.clone(), sym(&e, span)], t.span);
        acc = if arrow {
            let hit = gensym();
            let call = list(vec![r.clone(), sym(&hit, span)], r.span);
            list(vec![sym("if-let", span), vector(vec![sym(&hit, span), test], span), call, acc], span)
        } else {
            list(vec![sym("if", span), test, r.clone(), acc], span)
        };
    }
    Ok(list(
        vec![sym("let", span), vector(vec![sym(&p, span), args[0].clone(), sym(&e, span), args[1].clone()], span), acc],
        span,
    ))
}

/// `(assert expr message?)`: nil, or a runtime error naming the message (or the expression).
pub(crate) fn assert(args: &[Form], span: Span) -> R<Form> {
    let (expr, message) = match args {
        [expr] => (expr, None),
        [expr, message] => (expr, Some(message)),
        _ => {
            return Err(invalid(
                "assert takes an expression and an optional message: (assert (pos? n) \"n must be positive\")",
                span,
            ));
        }
    };
    let what = match message.map(|m| &m.kind) {
        Some(FormKind::Str(m)) => m.clone(),
        _ => ptc_lisp_syntax::print_form(expr),
    };
    let text = format!("assert failed: {what}");
    Ok(list(vec![sym("if", span), expr.clone(), Form::new(FormKind::Nil, span), raise(&text, span)], span))
}

/// The hidden form that raises a runtime error with a fixed message (it contains a space,
/// so no program can write it).
pub(crate) const RAISE_FORM: &str = " raise";

fn raise(message: &str, span: Span) -> Form {
    list(vec![sym(RAISE_FORM, span), Form::new(FormKind::Str(message.to_string()), span)], span)
}

/// The name of the hidden form that raises an arity error (it contains a space, so no
/// program can write it).
pub(crate) const ARITY_ERROR_FORM: &str = " arity-error";

fn int(i: usize, span: Span) -> Form {
    Form::new(FormKind::Int(i as i64), span)
}

/// Multi-arity `(fn name? ([x] a) ([x y] b) ([x & more] c))`, as the parameter vector and
/// body of one variadic function that dispatches on its argument count. Each body runs in
/// a `loop` over its own parameters, so `recur` keeps the arity of its clause.
pub(crate) fn multi_arity(
    label: &str,
    clauses: &[Form],
    span: Span,
    gensym: &mut dyn FnMut() -> String,
) -> R<(Vec<Form>, Form)> {
    struct Clause<'f> {
        fixed: usize,
        variadic: bool,
        params: &'f [Form],
        body: &'f [Form],
        span: Span,
    }
    let mut parsed = Vec::new();
    for c in clauses {
        let (FormKind::List(items), span) = (&c.kind, c.span) else {
            return Err(invalid(
                format!("each arity of {label} is a list ([params] body...), e.g. ([x] ...) ([x y] ...)"),
                c.span,
            ));
        };
        let Some((Form { kind: FormKind::Vector(params), .. }, body)) = items.split_first() else {
            return Err(invalid(
                format!("each arity of {label} starts with a parameter vector: ([x y] body...)"),
                span,
            ));
        };
        let amp = params.iter().position(|p| p.as_plain_symbol() == Some("&"));
        let fixed = amp.unwrap_or(params.len());
        parsed.push(Clause { fixed, variadic: amp.is_some(), params, body, span });
    }
    let variadic: Vec<&Clause> = parsed.iter().filter(|c| c.variadic).collect();
    if variadic.len() > 1 {
        return Err(invalid(format!("{label} can have only one variadic arity (with &)"), variadic[1].span));
    }
    for (i, c) in parsed.iter().enumerate() {
        if !c.variadic && parsed[..i].iter().any(|d| !d.variadic && d.fixed == c.fixed) {
            return Err(invalid(format!("{label} has two arities with {} parameters", c.fixed), c.span));
        }
        if let Some(v) = variadic.first()
            && !c.variadic
            && c.fixed > v.fixed
        {
            return Err(invalid(
                format!("{label}: a fixed arity cannot have more parameters than the variadic one"),
                c.span,
            ));
        }
    }
    let args = gensym();
    let n = gensym();
    let mut counts: Vec<String> = parsed.iter().filter(|c| !c.variadic).map(|c| c.fixed.to_string()).collect();
    if let Some(v) = variadic.first() {
        counts.push(format!("at least {}", v.fixed));
    }
    let message = format!("wrong number of arguments to {label}: it takes {}", counts.join(" or "));
    let mut acc = list(vec![sym(ARITY_ERROR_FORM, span), Form::new(FormKind::Str(message), span)], span);
    // fixed arities are tried first, the variadic one last
    let order = parsed.iter().filter(|c| c.variadic).chain(parsed.iter().filter(|c| !c.variadic));
    for c in order {
        let mut pattern = Vec::new();
        let mut loop_bindings = Vec::new();
        for p in c.params {
            if p.as_plain_symbol() == Some("&") {
                pattern.push(p.clone());
                continue;
            }
            let g = sym(&gensym(), p.span);
            pattern.push(g.clone());
            loop_bindings.push(p.clone());
            loop_bindings.push(g);
        }
        let mut lp = vec![sym("loop", c.span), vector(loop_bindings, c.span)];
        lp.extend(c.body.iter().cloned());
        let branch = list(
            vec![
                sym("let", c.span),
                vector(vec![vector(pattern, c.span), sym(&args, c.span)], c.span),
                list(lp, c.span),
            ],
            c.span,
        );
        let test =
            list(vec![sym(if c.variadic { ">=" } else { "=" }, c.span), sym(&n, c.span), int(c.fixed, c.span)], c.span);
        acc = list(vec![sym("if", c.span), test, branch, acc], c.span);
    }
    let body = list(
        vec![
            sym("let", span),
            vector(vec![sym(&n, span), list(vec![sym("count", span), sym(&args, span)], span)], span),
            acc,
        ],
        span,
    );
    Ok((vec![sym("&", span), sym(&args, span)], body))
}

/// A `letfn` function spec: its name and what follows the name.
pub(crate) type LetfnSpec<'a> = (&'a str, &'a [Form]);

/// The function specs of `(letfn [(f [x] ...) (g [y] ...)] body...)`: each name with
/// what follows it (a parameter vector and body, or arity clauses), and the body.
pub(crate) fn letfn_specs(args: &[Form], span: Span) -> R<(Vec<LetfnSpec<'_>>, &[Form])> {
    let Some((Form { kind: FormKind::Vector(specs), .. }, body)) = args.split_first() else {
        return Err(invalid(
            "letfn needs a vector of function specs: (letfn [(f [x] body) (g [y] body)] body...)",
            span,
        ));
    };
    let mut out: Vec<LetfnSpec<'_>> = Vec::with_capacity(specs.len());
    for s in specs {
        let spec = match &s.kind {
            FormKind::List(items) if items.len() >= 2 => items[0].as_plain_symbol().map(|name| (name, &items[1..])),
            _ => None,
        };
        let Some((name, rest)) = spec else {
            return Err(invalid(
                "each letfn spec looks like (name [params] body...) or (name ([x] ...) ([x y] ...))",
                s.span,
            ));
        };
        out.push((name, rest));
    }
    Ok((out, body))
}
