package harness

import (
	"fmt"
	"regexp"
	"strings"
)

var reJavaPublicClass = regexp.MustCompile(`(?m)^\s*(?:import\s[^;]*;\s*)*public\s+(?:(?:final|abstract)\s+)*class\s+(\w+)`)

// buildJava: the candidate, then a package-private class CfJudge (the
// runner starts CfJudge when the source declares it). Numbers compare by
// value across boxed types; arrays deeply.
func buildJava(b *langBuild) string {
	file := "Main.java"
	if m := reJavaPublicClass.FindStringSubmatch(b.code); m != nil {
		file = m[1] + ".java"
	}
	var w strings.Builder
	w.WriteString(b.code)
	fmt.Fprintf(&w, `
// codefeedback test judge
class CfJudge {
  static final String M = %s;
  static String esc(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c == '\n') b.append("\\n");
      else if (c < 0x20) b.append(String.format("\\u%%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }
  static void rec(String kind, int i, int line, String... kv) {
    StringBuilder b = new StringBuilder(M + " " + kind + " {\"i\": " + i);
    if (line > 0) b.append(", \"line\": ").append(line);
    for (int k = 0; k + 1 < kv.length; k += 2) b.append(", \"").append(kv[k]).append("\": ").append(esc(kv[k + 1]));
    System.out.println(b.append("}"));
    System.out.flush();
  }
  static String show(Object o) {
    String s;
    if (o == null) s = "null";
    else if (o instanceof String) s = esc((String) o);
    else if (o instanceof Object[]) s = java.util.Arrays.deepToString((Object[]) o);
    else if (o.getClass().isArray()) s = java.util.Arrays.deepToString(new Object[]{o}).replaceAll("^\\[|\\]$", "");
    else s = String.valueOf(o);
    return s.length() > %d ? s.substring(0, %d) + "..." : s;
  }
  static boolean eq(Object a, Object e) {
    if (a instanceof Number && e instanceof Number) {
      if (a instanceof Double || a instanceof Float || e instanceof Double || e instanceof Float)
        return ((Number) a).doubleValue() == ((Number) e).doubleValue();
      return ((Number) a).longValue() == ((Number) e).longValue();
    }
    if (a instanceof Character && e instanceof String) return a.toString().equals(e);
    return java.util.Objects.deepEquals(a, e);
  }
  static String[] cmp(String input, Object a, Object e) {
    if (eq(a, e)) return new String[]{"kind", "pass"};
    return new String[]{"kind", "wrong_answer", "input", input, "expected", show(e), "actual", show(a), "op", "=="};
  }
  static String[] truth(String input, boolean c) {
    if (c) return new String[]{"kind", "pass"};
    return new String[]{"kind", "wrong_answer", "input", input, "expected", "true", "actual", "false", "op", "=="};
  }
  static int line(Throwable t) {
    for (StackTraceElement el : t.getStackTrace())
      if (%s.equals(el.getFileName()) && el.getLineNumber() > 0 && el.getLineNumber() <= %d) return el.getLineNumber();
    return 0;
  }
  static String[] run(int i) throws Throwable {
    switch (i) {
`, jsonStr(b.marker), b.valueCap(), b.valueCap(), jsonStr(file), b.lines)
	for i, t := range b.tests {
		switch {
		case t.Actual != "":
			fmt.Fprintf(&w, "      case %d: return cmp(%s, %s, %s);\n", i, jsonStr(t.Actual), t.Actual, t.Expected)
		case t.Cond != "":
			fmt.Fprintf(&w, "      case %d: return truth(%s, %s);\n", i, jsonStr(t.Cond), t.Cond)
		default:
			fmt.Fprintf(&w, "      case %d: { %s; return new String[]{\"kind\", \"pass\"}; }\n", i, t.Stmt)
		}
	}
	fmt.Fprintf(&w, `    }
    return new String[]{"kind", "pass"};
  }
  public static void main(String[] args) {
    System.out.println(M + " plan " + %s);
    System.out.println(M + " load {\"ok\": 1}");
    for (int i = 0; i < %d; i++) {
      try { rec("case", i, 0, run(i)); }
      catch (Throwable t) {
        rec("case", i, line(t), "kind", "exception", "exception", t.getClass().getName(), "message", String.valueOf(t.getMessage()));
      }
    }
    System.out.println(M + " done {\"stdout\": \"\"}");
  }
}
`, jsonStr(b.planJSON()), len(b.tests))
	return w.String()
}
