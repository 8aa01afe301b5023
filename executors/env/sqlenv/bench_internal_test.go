package sqlenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	_ "github.com/codefeedback/codefeedback/executors/bwrap"
)

// benchDump writes a dump of one database with a table of n rows.
func benchDump(b *testing.B, n int) string {
	b.Helper()
	var sb strings.Builder
	sb.WriteString("CREATE DATABASE IF NOT EXISTS `bench`;\nUSE `bench`;\n")
	sb.WriteString("CREATE TABLE `t` (`id` int NOT NULL, `name` text COLLATE utf8mb4_general_ci, `v` double DEFAULT NULL, PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;\n")
	sb.WriteString("CREATE TABLE `u` (`id` int NOT NULL, `t_id` int DEFAULT NULL, PRIMARY KEY (`id`)) ENGINE=InnoDB;\n")
	for _, tbl := range []string{"t", "u"} {
		for i := 0; i < n; i += 500 {
			sb.WriteString("INSERT INTO `" + tbl + "` VALUES ")
			for j := i; j < min(i+500, n); j++ {
				if j > i {
					sb.WriteByte(',')
				}
				if tbl == "t" {
					fmt.Fprintf(&sb, "(%d,'name %d',%d.5)", j, j, j)
				} else {
					fmt.Fprintf(&sb, "(%d,%d)", j, j%97)
				}
			}
			sb.WriteString(";\n")
		}
	}
	p := b.TempDir() + "/bench_dbs.sql"
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkFreshDB: the per-episode cost of a fresh database. sqlite: our
// in-memory deserialize of the prepared file vs the naive way (building it
// from the dump's SQL each episode); mariadb: our copy of the base tables vs
// re-importing the dump. Spider's databases hold tens to thousands of rows.
func BenchmarkFreshDB(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{100, 5000} {
		dump := benchDump(b, n)
		if _, err := exec.LookPath("bwrap"); err == nil {
			ex, err := executors.Open(ctx, "bwrap://?pool=1")
			if err != nil {
				b.Fatal(err)
			}
			sq := newSQLite(ex, executors.Limits{Timeout: time.Minute}, b.TempDir(), 10*time.Second)
			if err := sq.reset(ctx, dump, "bench"); err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("sqlite-deserialize/%d", n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := sq.call(ctx, "_ic_reset", "bench"); err != nil {
						b.Fatal(err)
					}
				}
			})
			d, _ := ParseDump(strings.NewReader(mustRead(b, dump)))
			var script strings.Builder
			for _, st := range d.DBs["bench"] {
				script.WriteString(ToSQLite(st, true) + ";\n")
			}
			b.Run(fmt.Sprintf("sqlite-naive-import/%d", n), func(b *testing.B) {
				code := fmt.Sprintf("_c = _ic_sqlite3.connect(':memory:')\n_c.executescript(%q)\n_c.close()", script.String())
				for i := 0; i < b.N; i++ {
					r, err := sq.s.Exec(ctx, code)
					if err != nil || !r.OK() {
						b.Fatalf("%v %s", err, r.Stderr)
					}
				}
			})
			sq.close()
			ex.Close()
		}
		if _, err := os.Stat("/run/mysqld/mysqld.sock"); err != nil && os.Getenv("CODEFEEDBACK_MARIADB_DSN") == "" {
			continue
		}
		m, err := newMariaDB(ctx, "", 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		h, err := m.load(ctx, dump)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("mariadb-after-ddl/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				m.dirty, m.schemaDirty = true, true
				if err := m.reset(ctx, dump, "bench"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("mariadb-after-dml/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				m.dirty = true
				if err := m.reset(ctx, dump, "bench"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("mariadb-clean-episode/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := m.reset(ctx, dump, "bench"); err != nil {
					b.Fatal(err)
				}
			}
		})
		data := mustRead(b, dump)
		b.Run(fmt.Sprintf("mariadb-naive-reimport/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := m.importDump(ctx, data, h+"x"); err != nil {
					b.Fatal(err)
				}
			}
		})
		m.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+baseName(h+"x", "bench")+"`")
		m.close()
	}
}

func mustRead(b *testing.B, p string) string {
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}
