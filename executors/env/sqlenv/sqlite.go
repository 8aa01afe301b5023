package sqlenv

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env"
)

//go:embed sqlite_helper.py
var sqliteHelper string

// dbMount is where a dump's prepared SQLite files appear in the sandbox.
const dbMount = "/icdb"

// sqliteBackend runs statements with the sqlite3 module of a Python session
// in the sandbox. Each dump is converted once into one .sqlite file per
// database (in the cache, bound read-only into the sandbox); an episode's
// fresh database is an in-memory copy deserialized from that file's bytes,
// which the session reads once.
type sqliteBackend struct {
	ex       executors.Executor
	lim      executors.Limits
	cacheDir string
	stmtTime time.Duration

	s       executors.Session
	dir     string // the mounted directory of the open session
	dumps   map[string]string
	curDB   string
	curDump string
	stage   string // world-searchable directory the sessions bind from
}

func newSQLite(ex executors.Executor, lim executors.Limits, cacheDir string, stmtTime time.Duration) *sqliteBackend {
	return &sqliteBackend{ex: ex, lim: lim, cacheDir: cacheDir, stmtTime: stmtTime, dumps: map[string]string{}}
}

// prepare builds (once) the SQLite files of a dump and returns their directory.
func (b *sqliteBackend) prepare(ctx context.Context, dumpPath string) (string, error) {
	if d, ok := b.dumps[dumpPath]; ok {
		return d, nil
	}
	if strings.HasSuffix(dumpPath, ".sqlite") || strings.HasSuffix(dumpPath, ".db") {
		// A ready SQLite database (Spider's own files): its directory.
		d := filepath.Dir(dumpPath)
		b.dumps[dumpPath] = d
		return d, nil
	}
	data, err := os.ReadFile(dumpPath)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	dir := filepath.Join(b.cacheDir, "sqlite", hex.EncodeToString(sum[:8]))
	if err := env.BuildOnce(dir, func(out string) error { return b.build(ctx, dumpPath, data, out) }); err != nil {
		return "", err
	}
	b.dumps[dumpPath] = dir
	return dir, nil
}

// build makes the SQLite files of a dump in a world-writable temporary
// directory (the sandbox user writes them), then copies them into out.
func (b *sqliteBackend) build(ctx context.Context, dumpPath string, data []byte, out string) error {
	dump, err := ParseDump(strings.NewReader(string(data)))
	if err != nil {
		return fmt.Errorf("parsing %s: %w", dumpPath, err)
	}
	tmp, err := os.MkdirTemp("", "codefeedback-sqlbuild-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o777); err != nil { // the sandbox user writes the .sqlite files
		return err
	}
	var names []string
	for _, db := range dump.Order {
		var sb strings.Builder
		for _, st := range dump.DBs[db] {
			sb.WriteString(ToSQLite(st, true))
			sb.WriteString(";\n")
		}
		if err := os.WriteFile(filepath.Join(tmp, db+".sql"), []byte(sb.String()), 0o644); err != nil {
			return err
		}
		names = append(names, db)
	}
	s, err := b.ex.Open(ctx, executors.Python, executors.SessionOptions{
		Limits: executors.Limits{Timeout: 10 * time.Minute},
		Mounts: []executors.Mount{{Source: tmp, Target: dbMount}},
	})
	if err != nil {
		return fmt.Errorf("opening a sandbox to build databases: %w", err)
	}
	defer s.Close()
	namesJSON, _ := json.Marshal(names)
	res, err := s.Exec(ctx, sqliteHelper+"\n_ic_build("+string(namesJSON)+")")
	if err != nil {
		return err
	}
	if !res.OK() {
		return fmt.Errorf("building SQLite databases: %s", tail(res.Stdout+res.Stderr))
	}
	for _, n := range names {
		os.Remove(filepath.Join(tmp, n+".sql"))
	}
	return copyFiles(tmp, out)
}

// mountable returns a directory the sandbox user can reach holding dir's
// databases: the cache may sit below a private home (/root/.cache), so the
// files are hard-linked (copied across file systems) into a world-searchable
// temporary directory.
func (b *sqliteBackend) mountable(dir string) (string, error) {
	if b.stage == "" {
		s, err := os.MkdirTemp("", "codefeedback-sql-")
		if err != nil {
			return "", err
		}
		if err := os.Chmod(s, 0o711); err != nil {
			return "", err
		}
		b.stage = s
	}
	sum := sha256.Sum256([]byte(dir))
	out := filepath.Join(b.stage, hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.Mkdir(out, 0o755); err != nil {
		return "", err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".sqlite") {
			continue
		}
		src, dst := filepath.Join(dir, e.Name()), filepath.Join(out, e.Name())
		if err := os.Link(src, dst); err != nil {
			data, err := os.ReadFile(src)
			if err != nil {
				return "", err
			}
			if err := os.WriteFile(dst, data, 0o644); err != nil {
				return "", err
			}
		}
		os.Chmod(dst, 0o644)
	}
	return out, nil
}

func (b *sqliteBackend) reset(ctx context.Context, dumpPath, db string) error {
	cached, err := b.prepare(ctx, dumpPath)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(cached, db+".sqlite")); err != nil {
		return fmt.Errorf("database %q not in %s", db, dumpPath)
	}
	dir, err := b.mountable(cached)
	if err != nil {
		return fmt.Errorf("staging databases: %w", err)
	}
	if b.s == nil || b.dir != dir {
		if b.s != nil {
			b.s.Close()
			b.s = nil
		}
		lim := b.lim
		lim.OutputBytes = 16 << 20
		s, err := b.ex.Open(ctx, executors.Python, executors.SessionOptions{
			Limits: lim, Mounts: []executors.Mount{{Source: dir, Target: dbMount, ReadOnly: true}},
		})
		if err != nil {
			return fmt.Errorf("opening sandbox: %w", err)
		}
		res, err := s.Exec(ctx, sqliteHelper)
		if err != nil || !res.OK() {
			s.Close()
			return fmt.Errorf("loading the SQL helper: %v %s", err, res.Stderr)
		}
		b.s, b.dir = s, dir
	}
	b.curDB, b.curDump = db, dumpPath
	_, err = b.call(ctx, "_ic_reset", db)
	return err
}

// call runs helper fn with JSON arguments and decodes its JSON line.
func (b *sqliteBackend) call(ctx context.Context, fn string, args ...any) (result, error) {
	a, _ := json.Marshal(args)
	// Statements travel as base64 of JSON: data, never Python source.
	res, err := b.s.Exec(ctx, fmt.Sprintf("%s(*_ic_json.loads(_ic_b64.b64decode(%q)), limit=%g)",
		fn, base64.StdEncoding.EncodeToString(a), b.stmtTime.Seconds()))
	if err != nil {
		return result{}, err
	}
	if res.TimedOut || res.Killed {
		// The session restarted empty: reload the helper on the next reset.
		b.s.Close()
		b.s = nil
		return result{Err: "Query timed out"}, nil
	}
	var r result
	line := strings.TrimSpace(res.Stdout)
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		return result{}, fmt.Errorf("SQL helper said %q (%s)", tail(res.Stdout), tail(res.Stderr))
	}
	r.decode()
	return r, nil
}

func (b *sqliteBackend) exec(ctx context.Context, sql string) (result, error) {
	if b.s == nil {
		if err := b.reset(ctx, b.curDump, b.curDB); err != nil {
			return result{}, err
		}
	}
	return b.call(ctx, "_ic_exec", sql)
}

func (b *sqliteBackend) gold(ctx context.Context, dumpPath, db, sql string) (result, error) {
	if b.s == nil {
		if err := b.reset(ctx, dumpPath, db); err != nil {
			return result{}, err
		}
	}
	return b.call(ctx, "_ic_gold", db, sql)
}

func (b *sqliteBackend) close() error {
	var err error
	if b.s != nil {
		err = b.s.Close()
		b.s = nil
	}
	if b.stage != "" {
		os.RemoveAll(b.stage)
		b.stage = ""
	}
	return err
}

// copyFiles copies the files of src into the existing directory dst.
func copyFiles(src, dst string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func tail(s string) string {
	if len(s) > 400 {
		return "..." + s[len(s)-400:]
	}
	return s
}

var errNoDB = errors.New("sqlenv: task has no database")
