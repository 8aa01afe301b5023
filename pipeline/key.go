package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"

	"github.com/codefeedback/codefeedback/internal/store"
)

// stageKey hashes what determines a stage's results besides its input.
func stageKey(s *StageSpec, st *Stage) string {
	return store.Key("stage/v1", s.Type, s.Settings, st.Version)
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
