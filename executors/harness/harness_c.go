package harness

import (
	"fmt"
	"strings"
)

// cPrelude: headers the judge needs, then #line so the candidate's lines
// read as main.c's own.
const cPrelude = "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <stdbool.h>\n#include <unistd.h>\n#include <signal.h>\n#include <sys/wait.h>\n"

// cJudgeCommon runs each case in a forked child with an alarm, so a crash,
// an exit or a hang ends one case, not the judge.
const cJudgeCommon = `
static void cf_json(const char *s) {
  putchar('"');
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') { putchar('\\'); putchar(c); }
    else if (c == '\n') fputs("\\n", stdout);
    else if (c < 0x20) printf("\\u%04x", c);
    else putchar(c);
  }
  putchar('"');
}
static void cf_rec4(const char *kind, const char *k1, const char *v1, const char *k2, const char *v2, const char *k3, const char *v3, const char *k4, const char *v4, int i) {
  printf("%s %s {\"i\": %d", CF_MARKER, kind, i);
  if (k1) { printf(", \"%s\": ", k1); cf_json(v1); }
  if (k2) { printf(", \"%s\": ", k2); cf_json(v2); }
  if (k3) { printf(", \"%s\": ", k3); cf_json(v3); }
  if (k4) { printf(", \"%s\": ", k4); cf_json(v4); }
  printf("}\n");
  fflush(stdout);
}
static void cf_rec(const char *kind, const char *k1, const char *v1, const char *k2, const char *v2, const char *k3, const char *v3, int i) {
  cf_rec4(kind, k1, v1, k2, v2, k3, v3, 0, 0, i);
}
static int cf_run(int i);
int main(void) {
  printf("%s plan %s\n%s load {\"ok\": 1}\n", CF_MARKER, CF_PLAN, CF_MARKER);
  fflush(stdout);
  for (int i = 0; i < CF_CASES; i++) {
    fflush(stdout); fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) { alarm(CF_CASE_SECONDS); int k = cf_run(i); fflush(stdout); _exit(k); }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0) { cf_rec("case", "kind", "exception", "exception", "fork", "message", "could not start the test", i); continue; }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77) continue;
    char msg[128];
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM) { snprintf(msg, sizeof msg, "timed out after %ds", CF_CASE_SECONDS); cf_rec("case", "kind", "timeout", "message", msg, 0, 0, i); continue; }
    if (WIFSIGNALED(st)) { snprintf(msg, sizeof msg, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st))); cf_rec("case", "kind", "exception", "exception", strsignal(WTERMSIG(st)), "message", msg, i); continue; }
    snprintf(msg, sizeof msg, "the code exited with status %d during the test", WEXITSTATUS(st));
    cf_rec("case", "kind", "exception", "exception", "exit", "message", msg, i);
  }
  printf("%s done {\"stdout\": \"\"}\n", CF_MARKER);
  return 0;
}
`

// cShow formats a scalar with _Generic (C); strings compare with strcmp in
// boolean tests.
const cShow = `
#define CF_SHOW(buf, x) _Generic((x), \
  double: snprintf(buf, sizeof buf, "%.17g", (double)(x)), float: snprintf(buf, sizeof buf, "%.9g", (double)(x)), \
  long: snprintf(buf, sizeof buf, "%ld", (long)(x)), long long: snprintf(buf, sizeof buf, "%lld", (long long)(x)), \
  unsigned long: snprintf(buf, sizeof buf, "%lu", (unsigned long)(x)), unsigned: snprintf(buf, sizeof buf, "%u", (unsigned)(x)), \
  _Bool: snprintf(buf, sizeof buf, "%s", (x) ? "true" : "false"), char: snprintf(buf, sizeof buf, "'%c'", (char)(x)), \
  default: snprintf(buf, sizeof buf, "%lld", (long long)(x)))
`

func cCases(b *langBuild, cpp bool) string {
	var w strings.Builder
	w.WriteString("static int cf_run(int i) {\n  char ab[512], eb[512];\n  (void)ab; (void)eb;\n")
	if cpp {
		w.WriteString("  try {\n")
	}
	w.WriteString("  switch (i) {\n")
	for i, t := range b.tests {
		fmt.Fprintf(&w, "  case %d: {\n", i)
		switch {
		case t.Actual != "":
			if cpp {
				fmt.Fprintf(&w, "    auto cf_a = (%s); auto cf_e = (%s);\n    if (cf_a == cf_e) break;\n    cf_rec4(\"case\", \"kind\", \"wrong_answer\", \"expected\", cf_show(cf_e).c_str(), \"actual\", cf_show(cf_a).c_str(), \"input\", %s, i);\n    return 77;\n  }\n", t.Actual, t.Expected, cStr(t.Actual))
			} else {
				fmt.Fprintf(&w, "    __typeof__(%[1]s) cf_a = (%[1]s); __typeof__(%[2]s) cf_e = (%[2]s);\n    if (cf_a == cf_e) break;\n    CF_SHOW(ab, cf_a); CF_SHOW(eb, cf_e);\n    cf_rec4(\"case\", \"kind\", \"wrong_answer\", \"expected\", eb, \"actual\", ab, \"input\", %s, i);\n    return 77;\n  }\n", t.Actual, t.Expected, cStr(t.Actual))
			}
			continue
		case t.Cond != "":
			fmt.Fprintf(&w, "    if (%s) break;\n    cf_rec(\"case\", \"kind\", \"wrong_answer\", \"input\", %s, \"expected\", \"true\", i);\n    return 77;\n  }\n", t.Cond, cStr(t.Cond))
			continue
		default:
			fmt.Fprintf(&w, "    %s\n    break;\n  }\n", t.Stmt)
		}
	}
	w.WriteString("  }\n")
	if cpp {
		w.WriteString("  } catch (const std::exception &e) {\n    cf_rec(\"case\", \"kind\", \"exception\", \"exception\", cf_demangle(typeid(e).name()).c_str(), \"message\", e.what(), i);\n    return 77;\n  } catch (...) {\n    cf_rec(\"case\", \"kind\", \"exception\", \"exception\", \"unknown\", \"message\", \"a non-standard exception was thrown\", i);\n    return 77;\n  }\n")
	}
	w.WriteString("  cf_rec(\"case\", \"kind\", \"pass\", 0, 0, 0, 0, i);\n  return 77;\n}\n")
	return w.String()
}

func cDefines(b *langBuild) string {
	secs := int(b.opts.CaseTimeout.Seconds())
	if secs < 1 {
		secs = 1
	}
	return fmt.Sprintf("#define CF_MARKER %s\n#define CF_PLAN %s\n#define CF_CASES %d\n#define CF_CASE_SECONDS %d\n",
		cStr(b.marker), cStr(b.planJSON()), len(b.tests), secs)
}

// buildC: prelude, the candidate at line 1 of main.c, then the judge
// (marked as one, so a recorded run can be re-run).
func buildC(b *langBuild) string {
	return cPrelude + "#line 1 \"main.c\"\n" + b.code + "// codefeedback test judge\n#line 1 \"cfjudge.c\"\n" + cDefines(b) + cShow + cJudgeCommon + cCases(b, false)
}

const cppShow = `
#include <sstream>
#include <string>
#include <vector>
#include <utility>
#include <typeinfo>
#include <exception>
#include <cxxabi.h>
static std::string cf_demangle(const char *n) { int st = 0; char *d = abi::__cxa_demangle(n, 0, 0, &st); std::string s = st == 0 && d ? d : n; free(d); return s; }
static std::string cf_show(const std::string &s) { std::ostringstream o; o << '"' << s << '"'; return o.str(); }
static std::string cf_show(const char *s) { return cf_show(std::string(s ? s : "")); }
static std::string cf_show(bool b) { return b ? "true" : "false"; }
static std::string cf_show(char c) { return std::string("'") + c + "'"; }
template <class T> static std::string cf_show(const T &v);
template <class A, class B> static std::string cf_show(const std::pair<A, B> &p) { return "(" + cf_show(p.first) + ", " + cf_show(p.second) + ")"; }
template <class T> static std::string cf_show(const std::vector<T> &v) { std::string s = "{"; for (size_t i = 0; i < v.size(); i++) { if (i) s += ", "; s += cf_show(v[i]); } return s + "}"; }
template <class T> static std::string cf_show(const T &v) { std::ostringstream o; o.precision(17); o << v; return o.str(); }
`

// buildCPP: like buildC, with try/catch per case and ostream printing.
func buildCPP(b *langBuild) string {
	return cPrelude + "#include <typeinfo>\n#line 1 \"main.cpp\"\n" + b.code + "// codefeedback test judge\n#line 1 \"cfjudge.cpp\"\n" + cDefines(b) + cppShow + cJudgeCommon + cCases(b, true)
}
