package pipeline

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Shard selects a stable 1/Count of the items: those whose id hashes to
// Index. The zero value (Count 0) selects everything.
type Shard struct {
	Index, Count int
}

// Enabled reports whether sharding is on.
func (s Shard) Enabled() bool { return s.Count > 1 }

func (s Shard) String() string {
	if !s.Enabled() {
		return "all"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Has reports whether the item id belongs to this shard. The assignment
// depends only on the id and Count, so it is the same on every machine and
// every run, and adding items never moves existing ones between shards.
func (s Shard) Has(id string) bool {
	if !s.Enabled() {
		return true
	}
	h := sha256.Sum256([]byte(id))
	return binary.BigEndian.Uint64(h[:8])%uint64(s.Count) == uint64(s.Index)
}

// ParseShard parses "i/N" (0 <= i < N).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("bad shard %q: want i/N with 0 <= i < N, e.g. 0/4", s)
	}
	return Shard{Index: i, Count: n}, nil
}

// ShardFromEnv reads the shard from a Kubernetes Indexed Job
// (JOB_COMPLETION_INDEX, with the count from CODEFEEDBACK_SHARDS since the
// Job's completions are not exposed to pods) or a Slurm array
// (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT, SLURM_ARRAY_TASK_MIN). It
// returns the zero Shard when neither is set. count overrides the total when
// not zero (from --shards).
func ShardFromEnv(getenv func(string) string, count int) (Shard, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	total := func(envs ...string) (int, error) {
		if count > 0 {
			return count, nil
		}
		for _, e := range envs {
			if v := getenv(e); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil {
					return 0, fmt.Errorf("%s=%q is not a number", e, v)
				}
				return n, nil
			}
		}
		return 0, fmt.Errorf("shard count unknown: set --shards N or %s", envs[0])
	}
	if v := getenv("JOB_COMPLETION_INDEX"); v != "" {
		n, err := total("CODEFEEDBACK_SHARDS")
		if err != nil {
			return Shard{}, err
		}
		return ParseShard(v + "/" + strconv.Itoa(n))
	}
	if v := getenv("SLURM_ARRAY_TASK_ID"); v != "" {
		n, err := total("SLURM_ARRAY_TASK_COUNT", "CODEFEEDBACK_SHARDS")
		if err != nil {
			return Shard{}, err
		}
		id, err := strconv.Atoi(v)
		if err != nil {
			return Shard{}, fmt.Errorf("SLURM_ARRAY_TASK_ID=%q is not a number", v)
		}
		if m := getenv("SLURM_ARRAY_TASK_MIN"); m != "" {
			mn, err := strconv.Atoi(m)
			if err != nil {
				return Shard{}, fmt.Errorf("SLURM_ARRAY_TASK_MIN=%q is not a number", m)
			}
			id -= mn
		}
		return ParseShard(strconv.Itoa(id) + "/" + strconv.Itoa(n))
	}
	return Shard{}, nil
}
