package feedbackloop

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/codefeedback/codefeedback/executors"
)

// langMention is a language as a request names it.
type langMention struct {
	lang string
	re   *regexp.Regexp
}

// langMentions are the ways a request asks for a language. The earliest
// mention in the text wins ("an HTML page with JavaScript" is HTML), except
// that a named Python wins over everything (a Python function that writes
// SQL is Python).
var langMentions = []langMention{
	{"typescript", regexp.MustCompile(`(?i)\btypescript\b`)},
	{"javascript", regexp.MustCompile(`(?i)\b(javascript|node\.?js|jquery|react)\b|\bjs\b`)},
	{"html", regexp.MustCompile(`(?i)\bhtml5?\b`)},
	{"css", regexp.MustCompile(`(?i)\bcss3?\b`)},
	{"sql", regexp.MustCompile(`(?i)\b(sql|mysql|postgres(ql)?|sqlite|t-sql)\b`)},
	{"bash", regexp.MustCompile(`(?i)\b(bash|shell script|shell command|unix command|linux command|awk|sed command)\b`)},
	{"cpp", regexp.MustCompile(`(?i)\bc\+\+|\bcpp\b`)},
	{"csharp", regexp.MustCompile(`(?i)\bc#|\bc sharp\b`)},
	{"java", regexp.MustCompile(`(?i)\bjava\b`)},
	{"go", regexp.MustCompile(`(?i)\bgolang\b|\b(in|using) go\b|\bgo (program|function|code)\b`)},
	{"rust", regexp.MustCompile(`(?i)\brust\b`)},
	{"ruby", regexp.MustCompile(`(?i)\bruby\b`)},
	{"php", regexp.MustCompile(`(?i)\bphp\b`)},
	{"lua", regexp.MustCompile(`(?i)\blua\b`)},
	{"swift", regexp.MustCompile(`(?i)\bswift\b`)},
	{"kotlin", regexp.MustCompile(`(?i)\bkotlin\b`)},
	{"r", regexp.MustCompile(`(?i)\b(in|using) r\b|\br (script|function|code)\b`)},
	{"c", regexp.MustCompile(`(?i)\b(in|using) c\b|\bc (program|function|code)\b|\bansi c\b`)},
}

var pythonRe = regexp.MustCompile(`(?i)\bpython\d?\b`)

// RequestedLanguage is the language a request asks for by name ("" when it
// names none): "Write a SQL query ..." is "sql", "Create an HTML page" is
// "html", "a Python function that prints HTML" is "python".
func RequestedLanguage(text string) string {
	if pythonRe.MatchString(text) {
		return "python"
	}
	best, at := "", len(text)+1
	for _, m := range langMentions {
		for _, loc := range m.re.FindAllStringIndex(text, -1) {
			if m.lang == "c" && loc[1] < len(text) && (text[loc[1]] == '+' || text[loc[1]] == '#') {
				continue // "in C++", "in C#"
			}
			if loc[0] < at {
				best, at = m.lang, loc[0]
			}
			break
		}
	}
	return best
}

// taskLanguage is the language a task is answered in: the task's own, else
// the one its first request names, else the default.
func taskLanguage(t Task, def string) string {
	if l := strings.ToLower(strings.TrimSpace(t.Language)); l != "" {
		if p, ok := executors.ParseLanguage(l); ok {
			return string(p)
		}
		return l
	}
	if len(t.Turns) > 0 {
		if l := RequestedLanguage(t.Turns[0].Text); l != "" {
			if p, ok := executors.ParseLanguage(l); ok {
				return string(p)
			}
			return l
		}
	}
	return def
}

// runnable reports whether the sandbox can run lang, and why not. Python,
// Bash and SQL always run; other sandbox languages are looked up once in
// the sandbox's toolchain list; anything else (HTML, CSS, C#) has no runner.
func (s *Simulator) runnable(ctx context.Context, lang string) (bool, string, error) {
	l, ok := executors.ParseLanguage(lang)
	if !ok {
		return false, fmt.Sprintf("the sandbox has no runner for %s", lang), nil
	}
	switch l {
	case executors.Python, executors.Bash, executors.SQL:
		return true, "", nil
	}
	s.langMu.Lock()
	if s.langs == nil {
		// Asked once per simulator; a failure (the sandbox did not answer)
		// is not kept, so the next task asks again.
		sts, err := executors.Languages(ctx, s.Exec)
		if err != nil {
			s.langMu.Unlock()
			return false, "", fmt.Errorf("simulate: list the sandbox's languages: %w", err)
		}
		s.langs = map[executors.Language]executors.LanguageStatus{}
		for _, st := range sts {
			s.langs[st.Language] = st
		}
	}
	s.langMu.Unlock()
	st, ok := s.langs[l]
	switch {
	case !ok:
		return false, fmt.Sprintf("the sandbox has no runner for %s", lang), nil
	case !st.Available:
		return false, fmt.Sprintf("the sandbox lacks %s's toolchain (%s)", lang, st.Missing), nil
	}
	return true, "", nil
}
