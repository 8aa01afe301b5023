package sqlenv

import (
	"reflect"
	"testing"
)

func TestParseLimitQuery(t *testing.T) {
	cases := []struct {
		q      string
		ok     bool
		keyed  string
		limit  int
		offset int
	}{
		{"SELECT Citizenship FROM singer GROUP BY Citizenship ORDER BY COUNT(*) DESC LIMIT 1", true,
			"SELECT Citizenship, COUNT(*) FROM singer GROUP BY Citizenship ORDER BY COUNT(*) DESC", 1, 0},
		{"SELECT T1.horsepower FROM CARS_DATA AS T1 ORDER BY T1.accelerate DESC LIMIT 1;", true,
			"SELECT T1.horsepower, T1.accelerate FROM CARS_DATA AS T1 ORDER BY T1.accelerate DESC", 1, 0},
		{"select a, b from t order by c asc, d desc limit 3 offset 2", true, "SELECT a, b, c, d from t order by c asc, d desc", 3, 2},
		{"SELECT a FROM t ORDER BY b LIMIT 2, 5", true, "SELECT a, b FROM t ORDER BY b", 5, 2},
		{"SELECT a FROM t WHERE x IN (SELECT y FROM u ORDER BY z LIMIT 1) ORDER BY sum(a) LIMIT 1", true,
			"SELECT a, sum(a) FROM t WHERE x IN (SELECT y FROM u ORDER BY z LIMIT 1) ORDER BY sum(a)", 1, 0},
		{"SELECT name FROM t WHERE note = 'order by x limit 1' ORDER BY price LIMIT 1", true,
			"SELECT name, price FROM t WHERE note = 'order by x limit 1' ORDER BY price", 1, 0},
		{"SELECT a FROM t ORDER BY b", false, "", 0, 0},
		{"SELECT a FROM t LIMIT 1", false, "", 0, 0},
		{"SELECT DISTINCT a FROM t ORDER BY b LIMIT 3", false, "", 0, 0},
		{"SELECT a FROM t ORDER BY 1 LIMIT 1", false, "", 0, 0},
		{"SELECT a FROM t UNION SELECT a FROM u ORDER BY a LIMIT 1", false, "", 0, 0},
		{"SELECT a FROM (SELECT a FROM t ORDER BY b LIMIT 1) AS s", false, "", 0, 0},
	}
	for _, c := range cases {
		lq, ok := parseLimitQuery(c.q)
		if ok != c.ok {
			t.Errorf("parseLimitQuery(%q): ok %v, want %v", c.q, ok, c.ok)
			continue
		}
		if ok && (lq.keyed() != c.keyed || lq.limit != c.limit || lq.offset != c.offset) {
			t.Errorf("parseLimitQuery(%q): keyed %q limit %d offset %d\nwant %q %d %d", c.q, lq.keyed(), lq.limit, lq.offset, c.keyed, c.limit, c.offset)
		}
	}
}

// A cut through a tie allows any of the tied rows in the cut's places;
// a cut between different keys allows only the gold's rows.
func TestTies(t *testing.T) {
	// (name, count): B and C tie at 2 for the second place of LIMIT 2.
	full := [][]any{{"A", int64(3)}, {"B", int64(2)}, {"C", int64(2)}, {"D", int64(1)}}
	lq := limitQuery{keys: []string{"n"}, limit: 2}
	ts := ties(full, 1, lq)
	if ts == nil || ts.alternatives() != 2 {
		t.Fatalf("ties: %+v, want 2 alternatives", ts)
	}
	for _, c := range []struct {
		agent, want [][]any
	}{
		{[][]any{{"A"}, {"C"}}, [][]any{{"A"}, {"C"}}},
		{[][]any{{"A"}, {"B"}}, [][]any{{"A"}, {"B"}}},
		{[][]any{{"A"}, {"D"}}, [][]any{{"A"}, {"B"}}},
	} {
		if got := ts.goldFor(c.agent); !reflect.DeepEqual(got, c.want) {
			t.Errorf("goldFor(%v) = %v, want %v", c.agent, got, c.want)
		}
	}
	if r := Reward([][]any{{"A"}, {"C"}}, ts.goldFor([][]any{{"A"}, {"C"}}), true); r != 1 {
		t.Errorf("the other tied row scores %v, want 1", r)
	}
	if ts := ties(full, 1, limitQuery{keys: []string{"n"}, limit: 1}); ts != nil {
		t.Errorf("LIMIT 1 above the tie: %+v, want none", ts)
	}
	if ts := ties(full, 1, limitQuery{keys: []string{"n"}, limit: 3}); ts != nil {
		t.Errorf("LIMIT 3 takes both tied rows: %+v, want none", ts)
	}
	// All four tie for one place: 4 answers.
	flat := [][]any{{"A", int64(1)}, {"B", int64(1)}, {"C", int64(1)}, {"D", int64(1)}}
	if ts := ties(flat, 1, limitQuery{keys: []string{"n"}, limit: 1}); ts == nil || ts.alternatives() != 4 {
		t.Errorf("four-way tie: %+v", ts)
	}
}

// splitTopLevel serves both CREATE TABLE column lists and ORDER BY lists:
// commas inside parentheses or any of the three quotes do not split.
func TestSplitTopLevel(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"a, b DESC", []string{"a", " b DESC"}},
		{"id INT, name VARCHAR(10, 2), PRIMARY KEY (id, name)", []string{"id INT", " name VARCHAR(10, 2)", " PRIMARY KEY (id, name)"}},
		{"'a,b', \"c,d\", `e,f`", []string{"'a,b'", " \"c,d\"", " `e,f`"}},
		{"'it''s, here', x", []string{"'it''s, here'", " x"}},
		{"", []string{""}},
	} {
		if got := splitTopLevel(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("splitTopLevel(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
