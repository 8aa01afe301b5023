package harness

import (
	"fmt"
	"strings"
)

// buildRust: the candidate, then macros that shadow assert_eq! and assert!
// for the tests (textual scope: they apply only after their definition), a
// panic hook that keeps the message and the line, and catch_unwind per test.
func buildRust(b *langBuild) string {
	var w strings.Builder
	w.WriteString(b.code)
	fmt.Fprintf(&w, `
// codefeedback test judge
const CF_MARKER: &str = %s;
const CF_CAP: usize = %d;
const CF_LINES: u32 = %d;
thread_local! { static CF_PANIC: std::cell::RefCell<(String, u32)> = std::cell::RefCell::new((String::new(), 0)); }

fn cf_esc(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn cf_cut(s: String) -> String {
    if s.chars().count() > CF_CAP { s.chars().take(CF_CAP).collect::<String>() + "..." } else { s }
}

fn cf_rec(kind: &str, i: usize, line: u32, kv: &[(&str, String)]) {
    let mut b = format!("{} {} {{\"i\": {}", CF_MARKER, kind, i);
    if line > 0 { b.push_str(&format!(", \"line\": {}", line)); }
    for (k, v) in kv { b.push_str(&format!(", \"{}\": {}", k, cf_esc(v))); }
    b.push('}');
    println!("{}", b);
}

type CfRes = Vec<(&'static str, String)>;

fn cf_eq<A: PartialEq<E> + std::fmt::Debug, E: std::fmt::Debug>(input: &str, a: &A, e: &E) -> CfRes {
    if a == e { return vec![("kind", "pass".to_string())]; }
    vec![("kind", "wrong_answer".to_string()), ("input", input.to_string()), ("expected", cf_cut(format!("{:?}", e))),
         ("actual", cf_cut(format!("{:?}", a))), ("op", "==".to_string())]
}

fn cf_true(input: &str, c: bool) -> CfRes {
    if c { return vec![("kind", "pass".to_string())]; }
    vec![("kind", "wrong_answer".to_string()), ("input", input.to_string()), ("expected", "true".to_string()),
         ("actual", "false".to_string()), ("op", "==".to_string())]
}

#[allow(unused_macros)]
macro_rules! assert_eq { ($a:expr, $e:expr $(,)?) => { cf_eq(stringify!($a), &$a, &$e) }; }
#[allow(unused_macros)]
macro_rules! assert { ($c:expr $(,)?) => { cf_true(stringify!($c), $c) }; }

fn main() {
    println!("{} plan {}", CF_MARKER, %s);
    println!("{} load {{\"ok\": 1}}", CF_MARKER);
    std::panic::set_hook(Box::new(|info| {
        let msg = if let Some(s) = info.payload().downcast_ref::<&str>() { s.to_string() }
            else if let Some(s) = info.payload().downcast_ref::<String>() { s.clone() } else { "panic".to_string() };
        let line = info.location().map(|l| l.line()).filter(|&l| l <= CF_LINES).unwrap_or(0);
        CF_PANIC.with(|p| *p.borrow_mut() = (msg, line));
    }));
    let cases: Vec<fn() -> CfRes> = vec![
`, cStr(b.marker), b.valueCap(), b.lines, cStr(b.planJSON()))
	b.writeCases(&w, caseForms{quote: cStr,
		eq:   "        || -> CfRes { cf_eq(%s, &(%s), &(%s)) },\n",
		cond: "        || -> CfRes { cf_true(%s, %s) },\n",
		stmt: "        || -> CfRes { %s; vec![(\"kind\", \"pass\".to_string())] },\n"})
	w.WriteString(`    ];
    for (i, c) in cases.iter().enumerate() {
        match std::panic::catch_unwind(*c) {
            Ok(r) => cf_rec("case", i, 0, &r),
            Err(_) => {
                let (msg, line) = CF_PANIC.with(|p| p.borrow().clone());
                cf_rec("case", i, line, &[("kind", "exception".to_string()), ("exception", "panic".to_string()), ("message", msg)]);
            }
        }
    }
    println!("{} done {{\"stdout\": \"\"}}", CF_MARKER);
}
`)
	return w.String()
}
