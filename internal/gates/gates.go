// Package gates holds the quality checks that stand after every model step
// of the pipeline: is a preface prose that explains, does feedback hold
// code, did a revision change the code, and does a stage reject so much of
// its input that it must fail. Stages count each gate's verdicts in their
// statistics under "gate/<name>/checked", "gate/<name>/rejected" and
// "gate/<name>/reason/<reason>", which the report and `inspect` read. The
// checks are pure functions of text, safe for concurrent use.
package gates

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/codefeedback/codefeedback/internal/tally"
)

// Verdict is one gate's decision on one item: Reason is "" when it passes.
type Verdict struct {
	Reason string // short, stable, usable as a statistics key: "code", "transition", ...
	Detail string // what was seen, for samples
}

// OK reports whether the item passed.
func (v Verdict) OK() bool { return v.Reason == "" }

func (v Verdict) String() string {
	if v.OK() {
		return "ok"
	}
	if v.Detail == "" {
		return v.Reason
	}
	return v.Reason + ": " + v.Detail
}

// Stats keys for a gate.
func CheckedKey(gate string) string        { return "gate/" + gate + "/checked" }
func RejectedKey(gate string) string       { return "gate/" + gate + "/rejected" }
func ReasonKey(gate, reason string) string { return "gate/" + gate + "/reason/" + reason }
func reasonPrefix(gate string) string      { return "gate/" + gate + "/reason/" }
func isGateKey(k string) (gate string, ok bool) {
	rest, ok := strings.CutPrefix(k, "gate/")
	if !ok {
		return "", false
	}
	g, tail, ok := strings.Cut(rest, "/")
	return g, ok && tail == "checked"
}

// Adder is what records a verdict: *pipeline.Stats and the engine's item
// statistics both have this method.
type Adder interface{ Add(key string, v float64) }

// Rejecter is what quarantines a rejected answer: *pipeline.Stats has
// this method (the engine writes what it receives to the quarantine file).
type Rejecter interface {
	Reject(gate, reason, detail string)
}

// Record counts v for gate in s and, when v rejects and s can quarantine
// (a Rejecter), hands it v's reason and detail: record with the item's
// recorder (pipeline.ItemStats) so the rejection is kept with the item.
func Record(s Adder, gate string, v Verdict) {
	if s == nil {
		return
	}
	s.Add(CheckedKey(gate), 1)
	if !v.OK() {
		s.Add(RejectedKey(gate), 1)
		s.Add(ReasonKey(gate, v.Reason), 1)
		if r, ok := s.(Rejecter); ok {
			r.Reject(gate, v.Reason, v.Detail)
		}
	}
}

// Figure is one gate's totals read back from a statistics snapshot.
type Figure struct {
	Gate              string
	Checked, Rejected float64
	Reasons           map[string]float64
}

// Share is the rejected share (0 when nothing was checked).
func (f Figure) Share() float64 {
	if f.Checked == 0 {
		return 0
	}
	return f.Rejected / f.Checked
}

// Figures reads every gate's totals from a statistics snapshot, by gate name.
func Figures(stats map[string]float64) []Figure {
	var out []Figure
	for k := range stats {
		g, ok := isGateKey(k)
		if !ok {
			continue
		}
		f := Figure{Gate: g, Checked: stats[k], Rejected: stats[RejectedKey(g)], Reasons: map[string]float64{}}
		for k2, v := range stats {
			if r, ok := strings.CutPrefix(k2, reasonPrefix(g)); ok {
				f.Reasons[r] = v
			}
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Gate < out[j].Gate })
	return out
}

// Fail checks every gate in stats against maxShare (a share 0..1 of rejected
// items; 1 disables the check) and returns an error naming each gate over
// it, with its reasons and the samples given, or nil.
func Fail(stage string, stats map[string]float64, maxShare float64, samples *Samples) error {
	if maxShare >= 1 {
		return nil
	}
	var msgs []string
	for _, f := range Figures(stats) {
		if f.Checked == 0 || f.Share() <= maxShare {
			continue
		}
		msgs = append(msgs, fmt.Sprintf("gate %s rejected %.0f of %.0f (%.0f%%, more than the allowed %.0f%%; reasons: %s)%s",
			f.Gate, f.Rejected, f.Checked, 100*f.Share(), 100*maxShare, reasons(f.Reasons), samples.For(f.Gate)))
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s", stage, strings.Join(msgs, "; "))
}

func reasons(m map[string]float64) string {
	return tally.Join(m, "%s %.0f", "none recorded")
}

// Samples keeps the first few rejected examples per gate for error
// messages. Not safe for concurrent use: stages fill it from Observe, which
// the engine calls from one goroutine.
type Samples struct {
	Max int
	m   map[string][]string
}

// Add keeps s as an example of gate's rejections (cut to 160 bytes).
func (s *Samples) Add(gate, sample string) {
	if s == nil {
		return
	}
	if s.m == nil {
		s.m = map[string][]string{}
	}
	if len(s.m[gate]) >= max(s.Max, 3) {
		return
	}
	s.m[gate] = append(s.m[gate], Cut(sample, 160))
}

// For renders gate's samples as "; samples: [a] [b]", or "".
func (s *Samples) For(gate string) string {
	if s == nil || len(s.m[gate]) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("; samples:")
	for _, x := range s.m[gate] {
		fmt.Fprintf(&b, " [%s]", x)
	}
	return b.String()
}

// Cut shortens s to about n bytes on a rune boundary, on one line.
func Cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !isRuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

var (
	fenceRe = regexp.MustCompile("(?m)^[ \t>]*(```|~~~)")
	// Lines that are code in any of the sandbox's languages rather than
	// prose: definitions, imports, control flow with a trailing colon,
	// assignments and calls standing alone, SQL statements.
	codeLineRe = regexp.MustCompile(`^\s*(def |class |import |from \S+ import |return\b|for .+:\s*$|while .+:\s*$|if .+:\s*$|elif .+:\s*$|else:\s*$|try:\s*$|except\b.*:\s*$|print\(|[A-Za-z_][\w.\[\]]*\s*(=|\+=|-=)\s*\S.*$|SELECT\b.+\bFROM\b|INSERT INTO\b|CREATE TABLE\b|[A-Za-z_][\w.]*\(.*\)\s*;?\s*$|[{}]\s*$|\w+\s*\(\)\s*\{)`)
)

// HasCode reports whether text holds code: a fenced block, or at least two
// lines that read as code (one stray line such as "Use `x = 1`" in prose is
// not enough; backticked inline code never counts).
func HasCode(text string) bool {
	if fenceRe.MatchString(text) {
		return true
	}
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "`") {
			continue
		}
		if codeLineRe.MatchString(l) && !proseLine(l) {
			n++
			if n >= 2 {
				return true
			}
		}
	}
	return false
}

// proseLine tells a sentence from code: many words and a full stop.
func proseLine(l string) bool {
	l = strings.TrimSpace(l)
	words := strings.Fields(l)
	return len(words) >= 8 && (strings.HasSuffix(l, ".") || strings.HasSuffix(l, "?")) && !strings.HasSuffix(l, ");")
}

// transitionRe matches openings that reply to feedback or announce code
// instead of explaining it: "Good point. Here's the updated code:",
// "Thanks for the feedback. Here is a revised version:", "Sure! Here's ...".
var transitionRe = regexp.MustCompile(`(?i)^\W*(good (point|catch|idea|question)|great (point|catch|idea|question|suggestion)|you'?re (absolutely )?right|you are (absolutely )?right|thanks?( you)? for (the|your)|thank you|certainly|sure\b|of course|absolutely|okay\b|ok\b|alright\b|here'?s\b|here is\b|here are\b|below is\b|the (updated|revised|corrected|fixed|new|following) (code|version|solution|implementation)|i'?ve (updated|revised|fixed|changed)|i have (updated|revised|fixed|changed)|(updated|revised|corrected) (code|version|solution))`)

// feedbackReplyRe matches openings that reply to feedback ("Good point.",
// "You're right", "Thanks for the feedback", "Here's the updated code"):
// wrong at the start of a first answer.
var feedbackReplyRe = regexp.MustCompile(`(?i)^\W*(good (point|catch)|great (point|catch|suggestion)|you'?re (absolutely )?right|you are (absolutely )?right|thanks?( you)? for (the|your) (feedback|suggestion|input|review|comment|note)|(here'?s|here is) (the|an?) (updated|revised|corrected|fixed|improved) (code|version|solution|implementation))`)

// FeedbackReply reports whether text opens like a reply to feedback.
func FeedbackReply(text string) bool { return feedbackReplyRe.MatchString(text) }

// Transition reports whether text opens with a transition phrase rather
// than an explanation.
func Transition(text string) bool { return transitionRe.MatchString(strings.TrimSpace(text)) }

// identRe finds identifiers in code.
var identRe = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// keywords of the sandbox languages and names too common to show that a
// preface is about this code.
var common = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`and as assert async await break class continue def del elif else except
		false finally for from global if import in is lambda none nonlocal not or pass raise return true try
		while with yield print self cls len range int str list dict set tuple float bool the a an of to is
		select from where insert into values create table update delete join on group by order limit
		echo then fi do done esac function local export x y i j k n s v e f result results value values`) {
		common[strings.ToLower(w)] = true
	}
}

// Names returns the identifiers of code worth naming in an explanation:
// function, class and variable names, and called library functions, without
// keywords and one-letter names.
func Names(code string) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range identRe.FindAllString(code, -1) {
		lw := strings.ToLower(w)
		if len(w) < 3 || common[lw] || seen[lw] {
			continue
		}
		seen[lw] = true
		out = append(out, w)
	}
	return out
}

// NamesCode reports whether prose names something the code does: one of the
// code's identifiers (a function, a variable, a called function), as a
// word, or split at underscores/camel case into words all present in the
// prose ("count_vowels" as "counts the vowels").
func NamesCode(prose, code string) bool {
	words := map[string]bool{}
	for _, w := range identRe.FindAllString(strings.ToLower(prose), -1) {
		words[w] = true
		words[strings.TrimSuffix(w, "s")] = true
	}
	for _, n := range Names(code) {
		ln := strings.ToLower(n)
		if words[ln] {
			return true
		}
		parts := splitIdent(n)
		if len(parts) < 2 {
			continue
		}
		all := true
		for _, p := range parts {
			if len(p) < 3 || common[p] {
				continue
			}
			if !words[p] && !words[strings.TrimSuffix(p, "s")] {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// splitIdent splits snake_case and camelCase into lower-case words.
func splitIdent(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for i, r := range s {
		switch {
		case r == '_' || unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && i > 0:
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// Preface checks an explanation placed before code: prose (no code), not a
// transition phrase, long enough to explain, and naming something the code
// does. code is the code the preface explains.
func Preface(text, code string, minChars int) Verdict {
	t := strings.TrimSpace(text)
	switch {
	case HasCode(t):
		return Verdict{Reason: "code", Detail: t}
	case Transition(t):
		return Verdict{Reason: "transition", Detail: t}
	case len(t) < minChars || len(strings.Fields(t)) < 6:
		return Verdict{Reason: "too_short", Detail: t}
	case code != "" && !NamesCode(t, code):
		return Verdict{Reason: "unrelated", Detail: t}
	}
	return Verdict{}
}

// SameLogic reports whether two programs differ at most in layout,
// comments and docstrings: a revision asked to make the code faster, to
// handle more inputs or to answer a new request that only adds a docstring
// is no revision.
func SameLogic(a, b string) bool {
	return NormalizeCode(StripDocstrings(a)) == NormalizeCode(StripDocstrings(b))
}

// StripDocstrings drops Python statements that are only a string literal
// (docstrings, and strings used as block comments), single- or
// triple-quoted, spanning lines or not. It works on lines: a literal that
// starts a line and is the whole statement goes; anything else stays.
func StripDocstrings(code string) string {
	kept, _ := splitDocstrings(code)
	return strings.Join(kept, "\n")
}

// splitDocstrings parts code's lines into those StripDocstrings keeps and
// those of the string-literal statements it drops.
func splitDocstrings(code string) (kept, docs []string) {
	lines := strings.Split(strings.ReplaceAll(code, "\r\n", "\n"), "\n")
	out := lines[:0:0]
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		body := strings.TrimLeft(t, "rRuUbB")
		if len(t)-len(body) > 2 {
			body = t
		}
		var q string
		switch {
		case strings.HasPrefix(body, `"""`), strings.HasPrefix(body, "'''"):
			q = body[:3]
		case strings.HasPrefix(body, `"`), strings.HasPrefix(body, "'"):
			q = body[:1]
		default:
			out = append(out, lines[i])
			continue
		}
		rest := body[len(q):]
		j := i
		if len(q) == 3 {
			// Find the closing quotes, on this line or a later one.
			for !strings.Contains(rest, q) && j+1 < len(lines) {
				j++
				rest = lines[j]
			}
		}
		k := strings.Index(rest, q)
		if k < 0 || strings.TrimSpace(rest[k+len(q):]) != "" && !strings.HasPrefix(strings.TrimSpace(rest[k+len(q):]), "#") {
			// Unclosed, or the literal is part of a longer statement.
			out = append(out, lines[i])
			continue
		}
		docs = append(docs, lines[i:j+1]...)
		i = j
	}
	return out, docs
}

// DocText is what Python code says in words: its docstrings (and other
// string-literal statements) and its # comments, one per line.
func DocText(code string) string {
	kept, docs := splitDocstrings(code)
	for _, l := range kept {
		if i := commentStart(l); i >= 0 {
			docs = append(docs, l[i+1:])
		}
	}
	return strings.Join(docs, "\n")
}

// docParamsRe matches a request to document a function's arguments
// ("document the arguments of f and their types", "add a docstring that
// describes each parameter").
var docParamsRe = regexp.MustCompile(`(?i)\b(document\w*|describ\w*|docstring\w*|comment\w*|explain\w*)\b[^.?!]{0,80}\b(arguments?|parameters?|params|args|inputs)\b`)

// AsksToDocumentParams reports whether a request asks for the arguments
// of a function to be documented.
func AsksToDocumentParams(request string) bool { return docParamsRe.MatchString(request) }

var (
	pyDefRe   = regexp.MustCompile(`(?m)^[ \t]*(?:async[ \t]+)?def[ \t]+([A-Za-z_]\w*)[ \t]*\(([^)]*)\)`)
	tickRe    = regexp.MustCompile("`([A-Za-z_]\\w*)(?:\\(\\))?`")
	paramName = regexp.MustCompile(`^\*{0,2}([A-Za-z_]\w*)`)
)

// UndocumentedParams lists the parameters of the Python function a request
// is about (the first `name` it quotes that the code defines, else the
// last function defined) that the code's docstrings and comments never
// name. A request to document the arguments met by a docstring that names
// none of them ("the arguments are left unmodified") teaches vague docs.
func UndocumentedParams(code, request string) []string {
	defs := pyDefRe.FindAllStringSubmatch(code, -1)
	if len(defs) == 0 {
		return nil
	}
	params := defs[len(defs)-1][2]
	for _, m := range tickRe.FindAllStringSubmatch(request, -1) {
		if i := slices.IndexFunc(defs, func(d []string) bool { return d[1] == m[1] }); i >= 0 {
			params = defs[i][2]
			break
		}
	}
	doc := DocText(code)
	var missing []string
	for _, p := range strings.Split(params, ",") {
		p = strings.TrimSpace(p)
		m := paramName.FindStringSubmatch(p)
		if m == nil || m[1] == "self" || m[1] == "cls" {
			continue
		}
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(m[1]) + `\b`).MatchString(doc) {
			missing = append(missing, m[1])
		}
	}
	return missing
}

// NormalizeCode makes two versions of a program comparable: comments and
// blank lines dropped, trailing space removed, line endings unified. Two
// programs equal after NormalizeCode differ only in layout and comments.
func NormalizeCode(code string) string {
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(code, "\r\n", "\n"), "\n") {
		if i := commentStart(l); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimRight(l, " \t")
		if strings.TrimSpace(l) == "" {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// commentStart finds a # comment outside string literals (Python, Bash), or -1.
func commentStart(l string) int {
	var q byte
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case q != 0:
			if c == '\\' {
				i++
			} else if c == q {
				q = 0
			}
		case c == '\'' || c == '"':
			q = c
		case c == '#':
			return i
		}
	}
	return -1
}

// SameCode reports whether two programs are equal after NormalizeCode.
func SameCode(a, b string) bool { return NormalizeCode(a) == NormalizeCode(b) }

// keepRe matches a reply that says why the code stays as it is.
var keepRe = regexp.MustCompile(`(?i)\b(no (code )?change(s)? (is|are) (needed|necessary|required)|(does|do)( not|n't) need (to )?(be )?chang|already (handles|does|covers|checks|uses|validates|meets|satisfies|is)|(leave|keep|keeping|leaving) (the|this|it) (code )?(as it is|unchanged|as is)|stays? (the same|unchanged)|unchanged because|no need to change|would not (help|improve|change)|wouldn't (help|improve|change)|not change the code because)`)

// ExplainsNoChange reports whether an assistant reply says why it keeps
// the code unchanged.
func ExplainsNoChange(text string) bool { return keepRe.MatchString(text) }

// approvesRe matches feedback that only approves, asking for no change.
var approvesRe = regexp.MustCompile(`(?i)^\W*(looks (good|great|fine)|this is (good|great|fine|correct)|no (further )?changes? (needed|necessary)|perfect\b|lgtm\b)`)

var butRe = regexp.MustCompile(`(?i)\b(but|however|could|should|please|consider|instead)\b`)

// AsksForChange reports whether feedback asks for a change (anything but
// plain approval).
func AsksForChange(feedback string) bool {
	t := strings.TrimSpace(feedback)
	return t != "" && !(approvesRe.MatchString(t) && !strings.Contains(t, "?") && !butRe.MatchString(t))
}

// assertLineRe matches a Python check line: a bare assert or a unittest
// assertion.
var assertLineRe = regexp.MustCompile(`^(assert\b|self\.assert\w*\(|assert\w*\()`)

// BehaviourTests counts the check lines of after, not in before, that call
// a function the code defines with arguments ("assert add(-2, -3) == -5"):
// a request for tests met by "assert callable(add)" tests nothing.
func BehaviourTests(before, after string) int {
	// The code under test is what before defined (MBPP names some of its
	// functions test_*); test functions the answer adds are not.
	had := map[string]bool{}
	for _, d := range pyDefRe.FindAllStringSubmatch(before, -1) {
		had[d[1]] = true
	}
	var names []string
	for _, d := range pyDefRe.FindAllStringSubmatch(after, -1) {
		if had[d[1]] || len(had) == 0 && !strings.HasPrefix(d[1], "test") {
			names = append(names, regexp.QuoteMeta(d[1]))
		}
	}
	if len(names) == 0 {
		return 0
	}
	call := regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\(\s*[^)\s]`)
	old := map[string]bool{}
	for _, l := range strings.Split(before, "\n") {
		old[strings.TrimSpace(l)] = true
	}
	n := 0
	for _, l := range strings.Split(after, "\n") {
		t := strings.TrimSpace(l)
		if !old[t] && assertLineRe.MatchString(t) && call.MatchString(t) {
			n++
		}
	}
	return n
}

// validateRe matches a request to check a function's inputs ("validate
// the arguments", "guard f against inputs of the wrong type", "raise a
// ValueError for negative n").
var validateRe = regexp.MustCompile(`(?i)\b(validat\w*|sanitiz\w*|guard\w*|wrong types?|invalid (inputs?|arguments?|values?|types?|data)|type[- ]check\w*|(raise|raises|raising|throw|throws) (an? |the )?\w*(error|exception)|check (that|whether|if) (the |its |each |all )?(inputs?|arguments?|parameters?|values?))\b`)

// AsksToValidate reports whether a request asks for a function's inputs
// to be checked.
func AsksToValidate(request string) bool { return validateRe.MatchString(request) }

// emptyWordRe and handlingRe together match a request about how code
// treats empty or unusual input ("how does f handle an empty list? make
// that explicit"). A request for tests "including an edge case" names
// edge cases but asks for a test, not for the code's handling of empty
// input, so the subject alone is not enough.
var (
	emptyWordRe = regexp.MustCompile(`(?i)\b(empty|edge[- ]cases?|corner[- ]cases?|unusual inputs?)\b`)
	handlingRe  = regexp.MustCompile(`(?i)\b(handl\w*|behaviou?rs?|explicit\w*|deals? with|dealing with|treats?|treating|cop(e|es|ing) with|what happens)\b`)
)

// AsksAboutEmpty reports whether a request asks how a function handles
// empty or unusual input.
func AsksAboutEmpty(request string) bool {
	return emptyWordRe.MatchString(request) && handlingRe.MatchString(request)
}

var (
	// checkLineRe: a statement that checks a value, inside a function
	// (indented): raise, isinstance or type tests, an assert, an except
	// that catches what bad input raises.
	checkLineRe = regexp.MustCompile(`^[ \t]+(raise\b|assert\b|except\b|.*\bisinstance\(|.*\btype\([^)]*\)\s*(is|==|!=|in)\b)`)
	// guardOneLine / guardIf + returnLine: an if whose body returns at
	// once, inside a function.
	guardOneLine = regexp.MustCompile(`^[ \t]+if\b.*:\s*return\b`)
	guardIf      = regexp.MustCompile(`^[ \t]+if\b.*:$`)
	returnLine   = regexp.MustCompile(`^[ \t]+return\b`)
)

// InputChecks counts the lines of Python code that check a value inside a
// function: checks are raise, assert, isinstance or type tests and
// except clauses; guards are if-clauses that return at once
// (which a recursion's base case is too, so guards alone do not show that
// code validates its inputs).
func InputChecks(code string) (checks, guards int) {
	lines := strings.Split(NormalizeCode(StripDocstrings(code)), "\n")
	for i, l := range lines {
		switch {
		case checkLineRe.MatchString(l):
			checks++
		case guardOneLine.MatchString(l) || guardIf.MatchString(l) && i+1 < len(lines) && returnLine.MatchString(lines[i+1]):
			guards++
		}
	}
	return checks, guards
}

// UncheckedInputs reports whether code fails a request to validate its
// inputs: the request asks for checks, the revision adds none, and the
// code before had none it could point to ("no change is needed: the code
// already validates" over code that checks nothing teaches a false claim).
func UncheckedInputs(before, after, request string) bool {
	if !AsksToValidate(request) {
		return false
	}
	bc, bg := InputChecks(before)
	ac, ag := InputChecks(after)
	if ac > bc || ag > bg {
		return false
	}
	return !(bc > 0 && SameCode(StripDocstrings(before), StripDocstrings(after)))
}
