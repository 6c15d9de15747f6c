//! Form-level rewrites of the threading and conditional macros into core forms.
//! They run before analysis, so errors still point at the user's source spans.

use ptc_lisp_syntax::{Form, FormKind, Span};

use crate::error::{ErrorKind, EvalError};

type R<T> = Result<T, EvalError>;

/// A symbol form.
pub fn sym(name: &str, span: Span) -> Form {
    Form::new(FormKind::Symbol { ns: None, name: name.to_string() }, span)
}

/// A list form.
pub fn list(items: Vec<Form>, span: Span) -> Form {
    Form::new(FormKind::List(items), span)
}

/// A vector form.
pub fn vector(items: Vec<Form>, span: Span) -> Form {
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

pub fn thread(args: &[Form], last: bool, span: Span) -> R<Form> {
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
pub fn as_thread(args: &[Form], span: Span) -> R<Form> {
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
pub fn cond_thread(args: &[Form], last: bool, span: Span, gensym: &mut dyn FnMut() -> String) -> R<Form> {
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
pub fn some_thread(args: &[Form], last: bool, span: Span, gensym: &mut dyn FnMut() -> String) -> R<Form> {
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
pub fn cond(args: &[Form], span: Span) -> R<Form> {
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

/// `(condp pred expr t1 r1 ... default?)`.
pub fn condp(args: &[Form], span: Span, gensym: &mut dyn FnMut() -> String) -> R<Form> {
    check_steps("condp", args.len() / 2, span)?;
    if args.len() < 2 {
        return Err(invalid("condp needs a predicate and an expression: (condp = x 1 :one 2 :two :default)", span));
    }
    let p = gensym();
    let e = gensym();
    let clauses = &args[2..];
    let (pairs, default) = if clauses.len() % 2 == 1 {
        (&clauses[..clauses.len() - 1], Some(clauses[clauses.len() - 1].clone()))
    } else {
        (clauses, None)
    };
    let mut acc = default.unwrap_or(Form::new(FormKind::Nil, span));
    for pair in pairs.chunks(2).rev() {
        let test = list(vec![sym(&p, span), pair[0].clone(), sym(&e, span)], pair[0].span);
        acc = list(vec![sym("if", span), test, pair[1].clone(), acc], span);
    }
    Ok(list(
        vec![sym("let", span), vector(vec![sym(&p, span), args[0].clone(), sym(&e, span), args[1].clone()], span), acc],
        span,
    ))
}
