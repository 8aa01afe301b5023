package sqlenv_test

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/executors/env/envtest"
	"github.com/codefeedback/codefeedback/executors/env/sqlenv"
)

func loadFixture(t *testing.T) []env.Task {
	t.Helper()
	tasks := envtest.Tasks(t, "testdata/ic_spider_dev.json")
	if len(tasks) != 7 || tasks[4].Setup[env.SetupDB] != "school" || !strings.HasSuffix(tasks[0].Setup[env.SetupDBFile], "ic_spider_dbs.sql") || tasks[0].Setup["hardness"] != "easy" {
		t.Fatalf("loaded %d tasks: %+v", len(tasks), tasks[0])
	}
	return tasks
}

func TestParseDump(t *testing.T) {
	d, err := sqlenv.ReadDump("testdata/ic_spider_dbs.sql")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(d.Order, ",") != "shop,school" || len(d.DBs["shop"]) != 4 || len(d.DBs["school"]) != 2 {
		t.Fatalf("got databases %v with %d and %d statements; want shop (4), school (2)", d.Order, len(d.DBs["shop"]), len(d.DBs["school"]))
	}
	got := sqlenv.ToSQLite(d.DBs["shop"][1], true)
	for _, want := range []string{`'fresh` + "\n" + `red; crisp'`, `'it''s yellow'`, `'a "very" long note -- with dashes /* and a comment */ inside'`, `INSERT INTO "item" VALUES`} {
		if !strings.Contains(got, want) {
			t.Errorf("ToSQLite(insert) = %s\nwant it to contain %s", got, want)
		}
	}
	got = sqlenv.ToSQLite(d.DBs["shop"][0], true)
	for _, want := range []string{`"name" text COLLATE NOCASE`, `"id" int NOT NULL,`, `PRIMARY KEY ("id")`, `FOREIGN KEY ("shop_id") REFERENCES "store" ("id")`} {
		if !strings.Contains(got, want) {
			t.Errorf("ToSQLite(create) = %s\nwant it to contain %s", got, want)
		}
	}
	if strings.Contains(got, "name_idx") || strings.Contains(got, "ENGINE") || strings.Contains(got, "AUTO_INCREMENT") {
		t.Errorf("ToSQLite(create) kept MySQL-only parts: %s", got)
	}
}

// MySQL's key prefix lengths (`col`(255)) go from every column of a key,
// not only the first (Spider's employee_hire_evaluation has one on its
// second): SQLite would read them as function calls.
func TestKeyPrefixLengths(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"CREATE TABLE `t` (\n  `a` int NOT NULL,\n  `b` text,\n  PRIMARY KEY (`a`,`b`(255))\n)", `PRIMARY KEY ("a","b")`},
		{"CREATE TABLE `t` (\n  `a` text,\n  `b` text,\n  UNIQUE (`a`(10), `b`(20))\n)", `UNIQUE ("a", "b")`},
		{"CREATE TABLE `t` (\n  `a` text,\n  PRIMARY KEY (`a`(255))\n)", `PRIMARY KEY ("a")`},
	} {
		if got := sqlenv.ToSQLite(c.in, true); !strings.Contains(got, c.want) {
			t.Errorf("ToSQLite(%q) = %s\nwant it to contain %s", c.in, got, c.want)
		}
	}
}

func rows(vals ...any) [][]any {
	var out [][]any
	for _, v := range vals {
		out = append(out, []any{v})
	}
	return out
}

// InterCode's rule: IoU of the row multisets, scaled by Kendall's tau of the
// common rows' order (rounded to 2 places) when tau applies and is defined.
func TestReward(t *testing.T) {
	cases := []struct {
		name        string
		agent, gold [][]any
		tau         bool
		want        float64
	}{
		{"same rows same order", rows("a", "b", "c"), rows("a", "b", "c"), true, 1},
		{"both empty", nil, nil, true, 1},
		{"agent empty", nil, rows("a"), true, 0},
		{"reversed order", rows("c", "b", "a"), rows("a", "b", "c"), true, -1},
		{"reversed order, tau not applied", rows("c", "b", "a"), rows("a", "b", "c"), false, 1},
		{"one swap of three", rows("b", "a", "c"), rows("a", "b", "c"), true, 0.33},
		{"subset in order", rows("a", "b"), rows("a", "b", "c", "d"), true, 0.5},
		{"superset", rows("a", "b", "x"), rows("a", "b"), false, 2.0 / 3},
		{"single common row: tau undefined", rows("a", "x"), rows("a"), true, 0.5},
		{"multiset counts", rows("a", "a", "b"), rows("a", "b", "b"), false, 0.5},
		{"int is not float", rows(int64(1)), rows(1.0), true, 0},
		{"all rows tied: tau undefined", rows("a", "a"), rows("a", "a"), true, 1},
	}
	for _, c := range cases {
		if got := sqlenv.Reward(c.agent, c.gold, c.tau); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: Reward = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestRowKey(t *testing.T) {
	cases := []struct {
		row  []any
		want string
	}{
		{[]any{"a"}, "('a',)"},
		{[]any{int64(1), 2.5, nil}, "(1, 2.5, None)"},
		{[]any{"it's", 3.0, 1e16, 1e-5}, `("it's", 3.0, 1e+16, 1e-05)`},
		{[]any{"x\ny", []byte("b"), sqlenv.Decimal("1.50")}, `('x\ny', b'b', Decimal('1.50'))`},
	}
	var rows [][]any
	var keys []string
	for _, c := range cases {
		if got := sqlenv.RowKey(c.row); got != c.want {
			t.Errorf("RowKey(%v) = %s, want %s", c.row, got, c.want)
		}
		rows, keys = append(rows, c.row), append(keys, c.want)
	}
	// PyRows is the list of the same row tuples.
	for _, n := range []int{0, 1, len(rows)} {
		if got, want := sqlenv.PyRows(rows[:n]), "["+strings.Join(keys[:n], ", ")+"]"; got != want {
			t.Errorf("PyRows(%v) = %s, want %s", rows[:n], got, want)
		}
	}
}

func TestRenderTable(t *testing.T) {
	got := sqlenv.RenderTable([]string{"name", "note"}, [][]any{{"Apple", "fresh\nred"}, {"x", strings.Repeat("w", 30)}, {nil, 1.5}}, sqlenv.TableLimits{Rows: 2, Width: 12})
	want := "+-------+--------------+\n" +
		"| name  | note         |\n" +
		"+-------+--------------+\n" +
		"| Apple | fresh\\nred   |\n" +
		"| x     | wwwwwwwwwww… |\n" +
		"+-------+--------------+\n" +
		"(3 rows, first 2 shown)\n"
	if got != want {
		t.Errorf("RenderTable:\n%s\nwant\n%s", got, want)
	}
}

// eachBackend runs f as a subtest per driver and backend; the mariadb
// backend does not use the sandbox, so it runs on bwrap only.
func eachBackend(t *testing.T, f func(t *testing.T, d envtest.Driver, b backendCase)) {
	envtest.Each(t, func(t *testing.T, d envtest.Driver) {
		for _, b := range backends(t) {
			if b.name == "mariadb" && d.Name != "bwrap" {
				continue
			}
			t.Run(b.name, func(t *testing.T) { f(t, d, b) })
		}
	})
}

type backendCase struct {
	name   string
	params map[string]string
}

// backends are sqlite, and mariadb where a server answers (required when CI=true).
func backends(t *testing.T) []backendCase {
	bs := []backendCase{{"sqlite", map[string]string{"statement_time": "2s"}}}
	if _, err := os.Stat("/run/mysqld/mysqld.sock"); err == nil || os.Getenv("CODEFEEDBACK_MARIADB_DSN") != "" {
		bs = append(bs, backendCase{"mariadb", map[string]string{"backend": "mariadb", "statement_time": "2s"}})
	} else if os.Getenv("CI") == "true" {
		t.Fatal("CI=true but no MariaDB server (run .ci/setup test: it installs and starts mariadb-server)")
	} else {
		t.Log("no MariaDB server at /run/mysqld/mysqld.sock: mariadb backend not tested (.ci/setup test starts one)")
	}
	return bs
}

func TestEpisodes(t *testing.T) {
	tasks := loadFixture(t)
	cases := []struct {
		name    string
		task    int
		actions []string
		want    float64
	}{
		{"gold: ordered", 0, []string{tasks[0].Gold}, 1},
		{"gold: count", 1, []string{tasks[1].Gold}, 1},
		{"gold: case-insensitive match as MySQL", 2, []string{tasks[2].Gold}, 1},
		{"gold: unordered", 3, []string{tasks[3].Gold}, 1},
		{"gold: second database", 4, []string{"USE school", tasks[4].Gold}, 1},
		{"gold: newline in a value", 5, []string{tasks[5].Gold}, 1},
		{"gold: empty result", 6, []string{tasks[6].Gold}, 1},
		{"other query, same rows", 3, []string{"SELECT name, price FROM item WHERE price >= 1.5 ORDER BY id DESC"}, 1},
		{"exploring first", 1, []string{"SHOW TABLES", "DESCRIBE item", "SELECT COUNT(id) FROM item"}, 1},
		{"reversed order", 4, []string{"SELECT name FROM student WHERE grade >= 90 ORDER BY name"}, -1},
		{"half the rows, in order", 0, []string{"SELECT name FROM item WHERE price < 2 ORDER BY price"}, 0.5},
		{"error last", 1, []string{tasks[1].Gold, "SELECT nope FROM item"}, 0},
		{"no rows statement last", 1, []string{tasks[1].Gold, "UPDATE item SET price = 2 WHERE id = 1"}, 0},
		{"nothing run", 1, nil, 0},
		{"agent deletes rows: gold is unaffected", 1, []string{"DELETE FROM item WHERE id > 2", "SELECT count(*) FROM item"}, 0},
		{"fresh copy after the delete", 1, []string{tasks[1].Gold}, 1},
		{"the pristine database is out of reach", 1, []string{"ATTACH DATABASE '/icdb/shop.sqlite' AS p", "DELETE FROM cf_intercode.loaded", tasks[1].Gold}, 1},
		{"runaway query is stopped", 1, []string{"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"}, 0},
		{"episode after a runaway query", 1, []string{tasks[1].Gold}, 1},
	}
	eachBackend(t, func(t *testing.T, d envtest.Driver, b backendCase) {
		e := envtest.Open(t, "sql", d.Ex, env.Options{CacheDir: t.TempDir(), Params: b.params})
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				last, r := envtest.Play(t, e, tasks[c.task], c.actions, "submit")
				if math.Abs(r.Reward-c.want) > 1e-9 || !r.Done {
					t.Errorf("got reward %v (%v), want %v; last observation %q", r.Reward, r.Info, c.want, last.Observation)
				}
			})
		}
	})
}

func TestObservation(t *testing.T) {
	tasks := loadFixture(t)
	eachBackend(t, func(t *testing.T, d envtest.Driver, b backendCase) {
		ctx := context.Background()
		e := envtest.Open(t, "sql", d.Ex, env.Options{CacheDir: t.TempDir(), Params: b.params})
		if _, err := e.Reset(ctx, tasks[5]); err != nil {
			t.Fatal(err)
		}
		r, err := e.Step(ctx, "SELECT id, note FROM item WHERE id < 3 ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		want := "+----+-------------------+\n| id | note              |\n+----+-------------------+\n| 1  | fresh\\nred; crisp |\n| 2  | it's yellow       |\n+----+-------------------+\n(2 rows)\n"
		rows, _ := r.Info["rows"].([][]any)
		if r.Observation != want || !r.Valid || len(rows) != 2 || rows[0][1] != "fresh\nred; crisp" {
			t.Errorf("got %q valid %v rows %v\nwant %q", r.Observation, r.Valid, r.Info["rows"], want)
		}
		r, err = e.Step(ctx, "SELECT * FROM nowhere")
		if err != nil || r.Valid || !strings.Contains(r.Observation, "Error executing query") || !strings.Contains(strings.ToLower(r.Observation), "nowhere") {
			t.Errorf("bad table: %+v, %v", r, err)
		}
	})
}

// TestTiesAndBrokenGolds: an answer that picks other rows of a tie the
// gold's LIMIT cuts through scores as the gold (any tied answer); a gold
// that does not run scores every answer 0 unless gold_errors=empty
// (InterCode's rule, where any empty answer scored 1).
func TestTiesAndBrokenGolds(t *testing.T) {
	tasks := loadFixture(t)
	school, shop := tasks[4], tasks[0]
	with := func(base env.Task, gold string) env.Task {
		base.Gold = gold
		return base
	}
	cases := []struct {
		name    string
		task    env.Task
		params  map[string]string
		actions []string
		want    float64
		ties    int // Info tied_answers (0: none)
	}{
		{"tie: the gold's pick", with(school, "SELECT name FROM student ORDER BY grade LIMIT 2"), nil,
			[]string{"SELECT name FROM student WHERE name IN ('Cy', 'Bo') ORDER BY grade"}, 1, 2},
		{"tie: the other tied row", with(school, "SELECT name FROM student ORDER BY grade LIMIT 2"), nil,
			[]string{"SELECT name FROM student WHERE name IN ('Cy', 'Ed') ORDER BY grade"}, 1, 2},
		{"tie: a row outside the tie", with(school, "SELECT name FROM student ORDER BY grade LIMIT 2"), nil,
			[]string{"SELECT name FROM student WHERE name IN ('Cy', 'Di') ORDER BY grade"}, 0.33, 2},
		{"tie: ties=gold takes the gold's rows only", with(school, "SELECT name FROM student ORDER BY grade LIMIT 2"), map[string]string{"ties": "gold"},
			[]string{"SELECT name FROM student WHERE name IN ('Cy', 'Ada') ORDER BY grade"}, 0.33, 0},
		{"tie: grouped counts", with(shop, "SELECT shop_id FROM item GROUP BY shop_id ORDER BY count(*) DESC LIMIT 1"), nil,
			[]string{"SELECT 2"}, 1, 2},
		{"tie: grouped counts, the other", with(shop, "SELECT shop_id FROM item GROUP BY shop_id ORDER BY count(*) DESC LIMIT 1"), nil,
			[]string{"SELECT 1"}, 1, 2},
		{"no tie at the cut", with(school, "SELECT name FROM student ORDER BY grade DESC LIMIT 1"), nil,
			[]string{"SELECT 'Ada'"}, 0, 0},
		{"broken gold: an empty answer scores 0", with(shop, "SELECT name FROM item WHERE Position = Guard"), nil,
			[]string{"SELECT name FROM item WHERE price > 100"}, 0, 0},
		{"broken gold, gold_errors=empty: InterCode's 1", with(shop, "SELECT name FROM item WHERE Position = Guard"), map[string]string{"gold_errors": "empty"},
			[]string{"SELECT name FROM item WHERE price > 100"}, 1, 0},
	}
	eachBackend(t, func(t *testing.T, d envtest.Driver, b backendCase) {
		cache := t.TempDir()
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				params := map[string]string{}
				for k, v := range b.params {
					params[k] = v
				}
				for k, v := range c.params {
					params[k] = v
				}
				e := envtest.Open(t, "sql", d.Ex, env.Options{CacheDir: cache, Params: params})
				_, r := envtest.Play(t, e, c.task, c.actions, "submit")
				ties, _ := r.Info[sqlenv.InfoTies].(int)
				if math.Abs(r.Reward-c.want) > 0.011 || ties != c.ties {
					t.Errorf("got reward %v, %d tied answers (%v); want %v, %d", r.Reward, ties, r.Info, c.want, c.ties)
				}
				if broken := strings.Contains(c.name, "broken"); broken != (r.Info[sqlenv.InfoGoldError] != nil) {
					t.Errorf("gold_error %v", r.Info[sqlenv.InfoGoldError])
				}
			})
		}
	})
}
