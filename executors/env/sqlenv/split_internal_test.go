package sqlenv

import (
	"slices"
	"strings"
	"testing"
)

// A dump splits at semicolons outside literals and comments, and loses
// its comments; -- starts a comment only before white space or the end.
func TestSplitStatements(t *testing.T) {
	for _, c := range []struct {
		script string
		want   []string
	}{
		{"SELECT 1; -- note; here\nSELECT 2;", []string{"SELECT 1", "SELECT 2"}},
		{"SELECT 3--1;\nSELECT 4 --\n;", []string{"SELECT 3--1", "SELECT 4"}},
		{"SELECT 6/2; /*!40101 SET x=1; */ SELECT 5 /* a; b */ + 1;", []string{"SELECT 6/2", "SELECT 5   + 1"}},
		{"SELECT 'a;b', \"c\"\"d;\", `e;f`, 'it''s', 'x\\';y';", []string{"SELECT 'a;b', \"c\"\"d;\", `e;f`, 'it''s', 'x\\';y'"}},
		{"# hash; comment\nSELECT 7", []string{"SELECT 7"}},
		{"SELECT 8-", []string{"SELECT 8-"}},
		{"SELECT 9 /", []string{"SELECT 9 /"}},
	} {
		var got []string
		if err := splitStatements(strings.NewReader(c.script), func(s string) error { got = append(got, s); return nil }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("splitStatements(%q) = %q, want %q", c.script, got, c.want)
		}
	}
}
