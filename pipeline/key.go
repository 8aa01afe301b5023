package pipeline

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"reflect"
	"slices"
	"strings"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/store"
)

// stageKey hashes what determines a stage's results besides its input: the
// stage type, its settings except those tagged `key:"-"` (parallelism is
// the engine's, never part of a key), its Version and, for a stage that runs
// code, the opened executor's identity (driver, image with digest, default
// limits). exec is nil for stages that run no code, whose keys are then what
// they always were.
func stageKey(s *StageSpec, st *stageCaps, exec *executors.Info) (string, error) {
	settings, err := keySettings(s)
	if err != nil {
		return "", fmt.Errorf("stage %s: %w", s.Name, err)
	}
	if exec == nil {
		return store.Key("stage/v1", s.Type, settings, st.version), nil
	}
	return store.Key("stage/v1", s.Type, settings, st.version, *exec), nil
}

// keySettings returns the stage's settings as they enter its key: s.Settings
// as it is when no field of the options is tagged `key:"-"`, else the same
// JSON object without those fields.
func keySettings(s *StageSpec) (json.RawMessage, error) {
	if !s.opts.IsValid() {
		return s.Settings, nil
	}
	paths := unkeyedPaths(s.opts.Type().Elem(), nil)
	if len(paths) == 0 {
		return s.Settings, nil
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(s.Settings))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("settings for the cache key: %w", err)
	}
	for _, p := range paths {
		obj := m
		for _, k := range p[:len(p)-1] {
			next, _ := obj[k].(map[string]any)
			if next == nil {
				break
			}
			obj = next
		}
		delete(obj, p[len(p)-1])
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("settings for the cache key: %w", err)
	}
	return b, nil
}

// unkeyedPaths lists the JSON paths of t's fields tagged `key:"-"`,
// following embedded structs (whose fields JSON promotes) and nested ones.
func unkeyedPaths(t reflect.Type, prefix []string) [][]string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out [][]string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			out = append(out, unkeyedPaths(f.Type, prefix)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		path := append(slices.Clone(prefix), name)
		if f.Tag.Get("key") == "-" {
			out = append(out, path)
			continue
		}
		out = append(out, unkeyedPaths(f.Type, path)...)
	}
	return out
}

// keyHasher computes an item's store key, the hash of its stage key and
// its input line, for one stage with one reusable hash state.
// Not safe for concurrent use.
type keyHasher struct {
	stageKey []byte
	h        hash.Hash
	sum      [sha256.Size]byte
}

func newKeyHasher(stageKey string) *keyHasher {
	return &keyHasher{stageKey: append([]byte(stageKey), 0), h: sha256.New()}
}

func (k *keyHasher) key(line []byte) string {
	k.h.Reset()
	k.h.Write(k.stageKey)
	k.h.Write(line)
	return hex.EncodeToString(k.h.Sum(k.sum[:0]))
}
