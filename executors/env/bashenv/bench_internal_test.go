package bashenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// makeTree writes a template like NL2Bash's: dirs with small text files.
func makeTree(b *testing.B, root string, files int) {
	b.Helper()
	for i := 0; i < files; i++ {
		d := filepath.Join(root, "testbed", fmt.Sprintf("dir%d", i%5), fmt.Sprintf("sub%d", i%3))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("file%d.txt", i)), []byte(fmt.Sprintf("text file %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFreshFS compares a per-episode fresh file system made by our
// resync (re-copy only what the episode changed: here one file written, one
// deleted, one added) with the naive way (remove and copy the whole tree),
// for a tree the size of NL2Bash's (60 files) and a larger one (2000).
func BenchmarkFreshFS(b *testing.B) {
	for _, n := range []int{60, 2000} {
		tpl := b.TempDir()
		makeTree(b, tpl, n)
		// Replicas live in a bounded area (scratch.go): tmpfs as for shell
		// "session", or ext4 as for "intercode" with
		// CODEFEEDBACK_EPISODE_FS=ext4 (and CODEFEEDBACK_EPISODE_DIR=/tmp to
		// put its image where the Env does).
		scratch := func(b *testing.B) string {
			kind := fsTmpfs
			if os.Getenv("CODEFEEDBACK_EPISODE_FS") == fsExt4 {
				kind = fsExt4
			}
			s, err := newScratch(ScratchDir(), kind, DefaultDisk, DefaultDisk/(16<<10))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.close() })
			d, err := s.area("bench", filepath.Join(tpl, "testbed"))
			if err != nil {
				b.Fatal(err)
			}
			return d
		}
		dirty := func(dir string) {
			os.WriteFile(filepath.Join(dir, "testbed/dir1/sub1/file1.txt"), []byte("changed"), 0o644)
			os.Remove(filepath.Join(dir, "testbed/dir2/sub2/file2.txt"))
			os.WriteFile(filepath.Join(dir, "testbed/new.txt"), []byte("new"), 0o644)
		}
		for _, c := range []struct {
			name  string
			dirty func(string)
		}{{"resync", dirty}, {"resync-untouched", nil}} {
			b.Run(fmt.Sprintf("%s/%d", c.name, n), func(b *testing.B) {
				dir := scratch(b)
				os.Mkdir(filepath.Join(dir, "testbed"), 0o755)
				benchSync(b, &replica{tpl: tpl, dir: dir, names: []string{"testbed"}, uid: -1, gid: -1}, c.dirty)
			})
		}
		// The same tree as a root replica (bwrap): the template's / holds
		// the task path and a file, the replica also the driver's mount
		// points; the episode also wrote an archive into /.
		b.Run(fmt.Sprintf("resync-root/%d", n), func(b *testing.B) {
			os.WriteFile(filepath.Join(tpl, "index.html"), []byte("<html></html>\n"), 0o644)
			defer os.Remove(filepath.Join(tpl, "index.html"))
			dir := scratch(b)
			for _, d := range []string{"usr", "proc", "dev", "tmp", "etc", "sys"} {
				os.Mkdir(filepath.Join(dir, d), 0o755)
			}
			r := &replica{tpl: tpl, dir: dir, names: []string{"index.html", "testbed"}, root: true, uid: -1, gid: -1}
			benchSync(b, r, func(dir string) {
				dirty(dir)
				os.WriteFile(filepath.Join(dir, "archive.tgz"), []byte("x"), 0o644)
			})
		})
		b.Run(fmt.Sprintf("naive-copy/%d", n), func(b *testing.B) {
			dir := scratch(b)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dirty(dir)
				b.StartTimer()
				if err := os.RemoveAll(filepath.Join(dir, "testbed")); err != nil {
					b.Fatal(err)
				}
				if err := copyTree(filepath.Join(tpl, "testbed"), filepath.Join(dir, "testbed"), -1, -1, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchSync times r.Sync after a first, untimed one; dirty, when set,
// changes the replica before each (untimed).
func benchSync(b *testing.B, r *replica, dirty func(dir string)) {
	if err := r.Sync(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if dirty != nil {
			b.StopTimer()
			dirty(r.dir)
			b.StartTimer()
		}
		if err := r.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkArea: what an Env pays once per sandbox side and file-system
// variant for a bounded area (scratch.go), against a plain directory.
func BenchmarkArea(b *testing.B) {
	tpl := b.TempDir()
	makeTree(b, tpl, 60)
	for _, kind := range []string{fsPlain, fsTmpfs, fsExt4} {
		name := kind
		if name == fsPlain {
			name = "plain"
		}
		b.Run(name, func(b *testing.B) {
			s, err := newScratch(ScratchDir(), kind, DefaultDisk, DefaultDisk/(16<<10))
			if err != nil {
				b.Fatal(err)
			}
			defer s.close()
			for i := 0; i < b.N; i++ {
				if _, err := s.area("bench", filepath.Join(tpl, "testbed")); err != nil {
					b.Fatal(err)
				}
			}
			if s.kind() != kind {
				b.Fatalf("got %q areas", s.kind())
			}
		})
	}
}
