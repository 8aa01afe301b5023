package bashenv

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// The expected argv are Python's shlex.split('/bin/bash -c "' + action + '"'),
// what docker-py ran in InterCode's containers.
func TestCleanCmdIsShlexSplit(t *testing.T) {
	for _, c := range []struct {
		action string
		want   []string // nil: shlex raises
	}{
		{`ls -l /testbed`, []string{"/bin/bash", "-c", "ls -l /testbed"}},
		{`echo " hello world;876 " | tr -cd ';0-9'`, []string{"/bin/bash", "-c", "echo ", "hello", "world;876", " | tr -cd ';0-9'"}},
		{`cd /testbed && find . -name "*.txt" -exec wc -w {} \; | sort`, []string{"/bin/bash", "-c", `cd /testbed && find . -name *.txt -exec wc -w {} \; | sort`}},
		{`echo "don't"`, nil},
		{`printf "a\tb\"c\\d"`, []string{"/bin/bash", "-c", `printf atb"c\d`}},
		{`echo 'a"b' ""`, nil},
		{`awk '{print $1}' file`, []string{"/bin/bash", "-c", "awk '{print $1}' file"}},
		{`echo $(dirname "$(which python)")`, []string{"/bin/bash", "-c", "echo $(dirname $(which", "python))"}},
		{"  pwd \n", []string{"/bin/bash", "-c", "pwd"}},
	} {
		got, err := cleanCmd(c.action)
		if c.want == nil {
			if err == nil {
				t.Errorf("cleanCmd(%q) = %q, want shlex's error", c.action, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("cleanCmd(%q) = %q, %v; want %q", c.action, got, err, c.want)
		}
	}
}

func TestShlexSplitEdges(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		err  error
	}{
		{`a\`, nil, errNoEscaped},
		{`"a`, nil, errNoClosingQuote},
		{`a "" b`, []string{"a", "", "b"}, nil},
		{`a\ b 'c d'e`, []string{"a b", "c de"}, nil},
		{"\t a \r\n", []string{"a"}, nil},
		{``, nil, nil},
	} {
		got, err := shlexSplit(c.in)
		if err != c.err || !reflect.DeepEqual(got, c.want) {
			t.Errorf("shlexSplit(%q) = %q, %v; want %q, %v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestSimplifyPath(t *testing.T) {
	for _, c := range []struct{ cur, arg, want string }{
		{"/", "testbed", "/testbed"},
		{"/testbed", "../system/./folder1/", "/system/folder1"},
		{"/testbed", "/", "/"},
		{"/", "../..", "/"},
		{"/testbed", "", "/testbed"},
		// Not a path: InterCode keeps the whole string as the directory.
		{"/", "/testbed && ls", "/testbed && ls"},
	} {
		if got := simplifyPath(c.cur, c.arg); got != c.want {
			t.Errorf("simplifyPath(%q, %q) = %q, want %q", c.cur, c.arg, got, c.want)
		}
	}
}

// Times the setup script set by running move to the replica's creation
// (a template built hours ago still looks just built); times it set with
// touch -d stay.
func TestBuildWindowRetimes(t *testing.T) {
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	w := buildWindow{Start: start, End: start.Add(3 * time.Second)}
	now := start.Add(5 * time.Hour)
	rt := w.since(now)
	for _, c := range []struct{ in, want time.Time }{
		{start.Add(time.Second), start.Add(time.Second + 5*time.Hour - 3*time.Second)},
		{time.Date(2023, 5, 31, 23, 59, 59, 0, time.UTC), time.Date(2023, 5, 31, 23, 59, 59, 0, time.UTC)},
		{start.Add(time.Hour), start.Add(time.Hour)},
	} {
		if got := rt.apply(c.in); !got.Equal(c.want) {
			t.Errorf("retime(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if (buildWindow{}).since(now) != nil {
		t.Error("a template without a recorded build window is retimed")
	}
}

func TestICPathHash(t *testing.T) {
	m := manifest{
		"testbed":         {mode: os.ModeDir | 0o755},
		"testbed/a.txt":   {mode: 0o644, hash: "h1"},
		"testbed/l.txt":   {mode: os.ModeSymlink | 0o777, hash: "link:a.txt"},
		"testbed/abs.txt": {mode: os.ModeSymlink | 0o777, hash: "link:/testbed/a.txt"},
		"testbed/d.dir":   {mode: os.ModeDir | 0o755},
		"testbed/noext":   {mode: 0o644, hash: "h2"},
	}
	for _, c := range []struct{ path, want string }{
		{"testbed/a.txt", "h1"},
		{"testbed/l.txt", "h1"},   // md5sum follows the link
		{"testbed/abs.txt", "h1"}, //
		{"testbed/d.dir/", "md5sum: testbed/d.dir: Is a directory"},
		{"testbed/noext", "md5deep: executable file not found"}, // no "." : md5deep, absent
		{"testbed/gone.txt", "md5sum: testbed/gone.txt: No such file or directory"},
	} {
		if got := icPathHash(m, c.path); got != c.want {
			t.Errorf("icPathHash(%q) = %q, want %q", c.path, got, c.want)
		}
	}
}

// With gitTimes (shell "intercode") a resync gives what it puts back the
// time of the resync, as `git reset --hard` does in InterCode's containers;
// what the episode left alone keeps the template's time. Without, every
// resync puts the template's times back.
func TestResyncTimes(t *testing.T) {
	old := time.Date(2023, 3, 1, 23, 59, 59, 0, time.UTC)
	for _, git := range []bool{false, true} {
		tpl, dir := t.TempDir(), t.TempDir()
		for _, f := range []string{"testbed/a.txt", "testbed/b.txt"} {
			p := filepath.Join(tpl, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Mkdir(filepath.Join(dir, "testbed"), 0o755); err != nil {
			t.Fatal(err)
		}
		r := &replica{tpl: tpl, dir: dir, names: []string{"testbed"}, uid: -1, gid: -1, gitTimes: git}
		if err := r.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(dir, "testbed/a.txt")); err != nil {
			t.Fatal(err)
		}
		before := time.Now().Add(-time.Second)
		if err := r.Sync(); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			file     string
			restored bool
		}{{"testbed/a.txt", git}, {"testbed/b.txt", false}} {
			st, err := os.Stat(filepath.Join(dir, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := st.ModTime().After(before); got != c.restored || (!c.restored && !st.ModTime().Equal(old)) {
				t.Errorf("gitTimes %v: %s has time %v, want restored=%v (template %v)", git, c.file, st.ModTime(), c.restored, old)
			}
		}
	}
}
