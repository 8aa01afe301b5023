package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/internal/remote"
	"github.com/codefeedback/codefeedback/internal/store"
	"github.com/codefeedback/codefeedback/schema"
)

// A phased run spreads every per-item stage over parallel tasks, not only
// those before the first whole-set stage. The pipeline is cut at its
// whole-set stages into phases. Phase K's tasks (one per shard, on any
// machine) run its per-item stages on their share of the items, each in its
// own run directory; phase K's merge combines the tasks' stores into one
// merged run directory, replays the per-item stages there from the store
// (nothing is computed again, so the outputs are in the unsharded run's
// order and byte-identical to it), runs the whole-set stages that follow,
// and hands their outputs to phase K+1's tasks as plain files. The last
// merge publishes the outputs. A scheduler runs: tasks of phase 0, merge 0,
// tasks of phase 1, merge 1, ... each step after the one before.
//
// Layout under the run root (every directory is written by one process at
// a time, so no store is ever shared between machines):
//
//	ROOT/phase-K/shard-I-of-N/   a task's run directory
//	ROOT/merged/                 the merged run directory (outputs' manifest)
//	ROOT/handoff/phase-K/        what merge K-1 hands phase K's tasks

// Phase is one step of a phased run.
type Phase struct {
	Index int `json:"phase"`
	// Each are the per-item stages the phase's tasks run, each task on its
	// shard of the items.
	Each []string `json:"each"`
	// All are the whole-set stages the phase's merge runs after combining
	// the tasks.
	All []string `json:"all,omitempty"`
	// Seeds are the outputs of earlier phases' stages that the tasks read:
	// the previous merge writes them to the handoff directory.
	Seeds []string `json:"seeds,omitempty"`
}

// Plan cuts the pipeline into phases: a run of per-item stages (in the
// pipeline's execution order) and the whole-set stages after them. A
// pipeline that starts with a whole-set stage has a phase 0 with no
// per-item stages (no tasks; its merge runs the whole-set stages).
func Plan(cfg *Config) []Phase {
	var phases []Phase
	cur := Phase{}
	for _, s := range cfg.Stages {
		if !s.WholeSet() && len(cur.All) > 0 {
			phases = append(phases, cur)
			cur = Phase{Index: len(phases)}
		}
		if s.WholeSet() {
			cur.All = append(cur.All, s.Name)
		} else {
			cur.Each = append(cur.Each, s.Name)
		}
	}
	phases = append(phases, cur)
	for i := range phases {
		p := &phases[i]
		for _, s := range cfg.Stages {
			if !slices.Contains(p.Each, s.Name) {
				continue
			}
			for _, src := range s.Input {
				if src != InputsName && !slices.Contains(p.Each, src) && !slices.Contains(p.Seeds, src) {
					p.Seeds = append(p.Seeds, src)
				}
			}
		}
	}
	return phases
}

// PhaseTaskDir is the run directory of phase k's task for shard sh.
func PhaseTaskDir(root string, k int, sh Shard) string {
	return filepath.Join(root, "phase-"+strconv.Itoa(k), fmt.Sprintf("shard-%d-of-%d", sh.Index, sh.Count))
}

// PhaseMergedDir is the run directory every merge of a phased run writes:
// its manifest and published outputs are the run's.
func PhaseMergedDir(root string) string { return filepath.Join(root, "merged") }

func handoffDir(root string, k int) string {
	return filepath.Join(root, "handoff", "phase-"+strconv.Itoa(k))
}

// handoffIndex lists a handoff's files; it is written last, so its
// presence means the handoff is complete.
const handoffIndex = "handoff.json"

var newline = []byte{'\n'}

type handoffFile struct {
	File    string `json:"file"`
	OutHash string `json:"out_hash"`
	Items   int64  `json:"items"`
}

func phaseOf(cfg *Config, k int) (Phase, bool, error) {
	phases := Plan(cfg)
	if k < 0 || k >= len(phases) {
		return Phase{}, false, fmt.Errorf("%w: phase %d: the pipeline has phases 0..%d (see `codefeedback plan`)", ErrUsage, k, len(phases)-1)
	}
	return phases[k], k == len(phases)-1, nil
}

// TaskResult is what RunPhaseTask did.
type TaskResult struct {
	Dir      string
	Skipped  bool // the task had completed with the same inputs and settings
	Manifest *Manifest
}

// RunPhaseTask runs phase k's per-item stages on shard sh in the task's own
// run directory under root. Phase 0 reads the pipeline's inputs; later
// phases read what the previous merge handed over. A task that completed
// before with the same pipeline file, program version, shard, limit and
// inputs is skipped without opening anything (a resubmitted phase redoes
// only its unfinished tasks, and those resume from their stores); not with
// --force or --dry-run. The skip does not open the sandbox, so it does not
// see a rebuilt sandbox image: --force the stages that run code then.
func RunPhaseTask(ctx context.Context, cfg *Config, root string, k int, sh Shard, o RunOptions) (TaskResult, error) {
	ph, _, err := phaseOf(cfg, k)
	if err != nil {
		return TaskResult{}, err
	}
	if len(ph.Each) == 0 {
		return TaskResult{}, fmt.Errorf("%w: phase %d has no per-item stages, so no tasks: run its merge", ErrUsage, k)
	}
	if sh.Count < 1 {
		return TaskResult{}, fmt.Errorf("%w: a phase task needs its shard i/N", ErrUsage)
	}
	dir := PhaseTaskDir(root, k, sh)
	res := TaskResult{Dir: dir}
	key, err := taskKey(cfg, root, k, sh, o)
	if err != nil {
		return res, err
	}
	if m, err := ReadManifest(dir); err == nil && m.Status == "complete" && m.PhaseKey == key && len(o.Force) == 0 && !o.DryRun {
		res.Skipped, res.Manifest = true, m
		return res, nil
	}
	if k > 0 {
		if err := seedTask(ctx, root, dir, k, sh, ph.Seeds); err != nil {
			return res, err
		}
	}
	c := *cfg
	c.RunDir = dir
	o.Only, o.From, o.Shard, o.Phase, o.PhaseKey, o.NoPublish = ph.Each, "", sh, &k, key, true
	res.Manifest, err = Run(ctx, &c, o)
	return res, err
}

// taskKey identifies what a task's result depends on besides the stage keys
// the engine checks itself: the pipeline file, the program, the shard, the
// limit, and the task's input (the pipeline's input files by size and
// modification time for phase 0, the handoff's hashes after).
func taskKey(cfg *Config, root string, k int, sh Shard, o RunOptions) (string, error) {
	file, err := os.ReadFile(cfg.File)
	if err != nil {
		return "", fmt.Errorf("pipeline: %w", err)
	}
	var in []string
	if k == 0 {
		for _, s := range cfg.Inputs {
			if remote.IsURL(s.Path) {
				in = append(in, s.Path) // fetched and revalidated by the run
				continue
			}
			st, err := os.Stat(s.Path)
			if err != nil {
				return "", fmt.Errorf("pipeline: input %w", err)
			}
			in = append(in, fmt.Sprint(s.Path, st.Size(), st.ModTime().UnixNano()))
		}
	} else {
		b, err := os.ReadFile(filepath.Join(handoffDir(root, k), handoffIndex))
		if err != nil {
			return "", fmt.Errorf("%w: phase %d's input is not there yet (merge phase %d first): %w", ErrUsage, k, k-1, err)
		}
		in = append(in, string(b))
	}
	return store.Key("phase-task/v1", string(file), o.Version, k, sh.String(), sh.Count, o.Limit, in), nil
}

// seedTask writes the task's share of each handed-over output into its run
// directory as that stage's completed output, so the task's stages read it
// as if the stage had run there.
func seedTask(ctx context.Context, root, dir string, k int, sh Shard, seeds []string) error {
	lk, err := lockRunDir(dir)
	if err != nil {
		return err
	}
	defer lk.unlock()
	var idx map[string]handoffFile
	b, err := os.ReadFile(filepath.Join(handoffDir(root, k), handoffIndex))
	if err != nil {
		return fmt.Errorf("%w: phase %d's input is not there yet (merge phase %d first): %w", ErrUsage, k, k-1, err)
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return fmt.Errorf("pipeline: %s: %w", handoffIndex, err)
	}
	r := &runner{dir: dir, outDir: dir}
	for _, name := range seeds {
		h, ok := idx[name]
		if !ok {
			return fmt.Errorf("pipeline: phase %d's handoff has no output of stage %s (merge phase %d again)", k, name, k-1)
		}
		mkey := store.Key("seed/v1", h.OutHash, sh.String(), sh.Count)
		if m, err := r.readMarker(name); err == nil && m.Key == mkey {
			continue // seeded before from the same handoff
		}
		rel := filepath.Join("stages", name, "seed.jsonl.zst")
		w, err := newHashWriter(filepath.Join(dir, rel))
		if err != nil {
			return err
		}
		for ln, err := range readLines(filepath.Join(handoffDir(root, k), h.File)) {
			if err == nil {
				err = ctx.Err()
			}
			if err != nil {
				w.a.Abort()
				return fmt.Errorf("pipeline: seed %s: %w", name, err)
			}
			if sh.Has(itemID(ln.data)) {
				w.Write(ln.data) // not append: ln.data may share its buffer with the next line
				w.Write(newline)
			}
		}
		if err := w.a.Commit(); err != nil {
			return err
		}
		m := &marker{Key: mkey, InputHash: h.OutHash, OutHash: w.sum(), Output: rel, Counts: Counts{Out: w.lines}}
		if err := r.writeMarker(name, m); err != nil {
			return err
		}
	}
	return nil
}

// MergeResult is what MergePhase did.
type MergeResult struct {
	Dir      string
	Tasks    int
	Merged   MergeReport
	Manifest *Manifest
}

var taskDirRe = regexp.MustCompile(`^shard-(\d+)-of-(\d+)$`)

// PhaseTaskDirs lists phase k's task directories for n tasks (n 0: the one
// task count found there).
func PhaseTaskDirs(root string, k, n int) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(root, "phase-"+strconv.Itoa(k)))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	counts := map[int][]string{}
	for _, e := range ents {
		if m := taskDirRe.FindStringSubmatch(e.Name()); m != nil && e.IsDir() {
			c, _ := strconv.Atoi(m[2])
			counts[c] = append(counts[c], filepath.Join(root, "phase-"+strconv.Itoa(k), e.Name()))
		}
	}
	if n == 0 {
		if len(counts) > 1 {
			var cs []string
			for c := range counts {
				cs = append(cs, strconv.Itoa(c))
			}
			sort.Strings(cs)
			return nil, fmt.Errorf("%w: phase %d has tasks of %s shards: say which with --shards", ErrBadShards, k, strings.Join(cs, " and "))
		}
		for c := range counts {
			n = c
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: phase %d has no task directories under %s (run its tasks first)", ErrBadShards, k, root)
	}
	dirs := counts[n]
	sort.Strings(dirs)
	// A task that never started has no directory: CheckShards names it.
	return dirs, nil
}

// MergePhase combines phase k's finished tasks into the merged run
// directory, replays the phase's per-item stages there from the store, runs
// the whole-set stages that follow, and hands the next phase its input (or,
// after the last phase, publishes the outputs). n is the phase's task count
// (0: the one found). A failed, unfinished, duplicated or missing task is
// refused (ErrBadShards) and nothing is merged.
func MergePhase(ctx context.Context, cfg *Config, root string, k, n int, o RunOptions) (MergeResult, error) {
	ph, last, err := phaseOf(cfg, k)
	if err != nil {
		return MergeResult{}, err
	}
	res := MergeResult{Dir: PhaseMergedDir(root)}
	keys := map[string]string{}
	if len(ph.Each) > 0 {
		dirs, err := PhaseTaskDirs(root, k, n)
		if err != nil {
			return res, err
		}
		if err := CheckShards(dirs); err != nil {
			return res, err
		}
		for _, d := range dirs {
			m, err := ReadManifest(d)
			if err != nil {
				return res, fmt.Errorf("%w: %s: %w", ErrBadShards, d, err)
			}
			if m.Options.Phase == nil || *m.Options.Phase != k || m.Options.Limit != o.Limit {
				return res, fmt.Errorf("%w: %s is not a task of phase %d with --limit %d (its manifest: phase %v, limit %d)",
					ErrBadShards, d, k, o.Limit, phaseLabel(m.Options.Phase), m.Options.Limit)
			}
			if m.Version != o.Version {
				return res, fmt.Errorf("%w: %s was made by codefeedback %s, this is %s: run the phase's tasks again with this version",
					ErrBadShards, d, m.Version, o.Version)
			}
			for _, s := range m.Stages {
				if !slices.Contains(ph.Each, s.Name) || s.Key == "" {
					continue
				}
				// The merge takes the tasks' stage keys: they must be of
				// the pipeline file as it is now.
				if spec := stageSpec(cfg, s.Name); spec == nil || spec.Type != s.Type || !sameJSON(spec.Settings, s.Settings) {
					return res, fmt.Errorf("%w: stage %s in %s ran with other settings than the pipeline file's now: run the phase's tasks again",
						ErrBadShards, s.Name, d)
				}
				if prev, ok := keys[s.Name]; ok && prev != s.Key {
					return res, fmt.Errorf("%w: the tasks ran stage %s with different settings or sandboxes (%s differs)", ErrBadShards, s.Name, d)
				}
				keys[s.Name] = s.Key
			}
		}
		res.Tasks = len(dirs)
		if res.Merged, err = Merge(ctx, res.Dir, dirs); err != nil {
			return res, err
		}
	}
	c := *cfg
	c.RunDir = res.Dir
	o.Only = append(slices.Clone(ph.Each), ph.All...)
	o.From, o.Shard, o.Phase, o.StageKeys, o.NoPublish = "", Shard{}, &k, keys, !last
	res.Manifest, err = Run(ctx, &c, o)
	if res.Manifest != nil && !o.DryRun {
		// The merged directory's manifest is the last merge's: each
		// merge's own is kept beside it (what it ran, and how long).
		if werr := schema.WriteJSONAtomic(filepath.Join(res.Dir, "merge-"+strconv.Itoa(k)+".manifest.json"), res.Manifest); werr != nil && err == nil {
			err = fmt.Errorf("pipeline: %w", werr)
		}
	}
	if err != nil && !(errors.Is(err, ErrGateTripped) && !errors.Is(err, ErrUnitsFailed)) {
		return res, err
	}
	if !last {
		if herr := writeHandoff(ctx, res.Dir, root, k+1, Plan(cfg)[k+1].Seeds); herr != nil {
			return res, herr
		}
	}
	return res, err
}

func stageSpec(cfg *Config, name string) *StageSpec {
	for _, s := range cfg.Stages {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// sameJSON compares two JSON texts ignoring layout (a manifest indents).
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

func phaseLabel(p *int) string {
	if p == nil {
		return "none"
	}
	return strconv.Itoa(*p)
}

// writeHandoff writes the outputs phase k's tasks read, from the merged
// run directory, as plain item files: the tasks never open the merged
// store, which may be on another machine's disk or a shared volume.
func writeHandoff(ctx context.Context, merged, root string, k int, seeds []string) error {
	dir := handoffDir(root, k)
	os.Remove(filepath.Join(dir, handoffIndex)) // until every file below is written
	db, err := store.OpenBolt(filepath.Join(merged, "store.db"), true)
	if err != nil {
		return fmt.Errorf("pipeline: hand over to phase %d: %w", k, err)
	}
	defer db.Close()
	r := &runner{dir: merged, outDir: merged}
	idx := map[string]handoffFile{}
	for _, name := range seeds {
		m, err := r.readMarker(name)
		if err != nil {
			return fmt.Errorf("pipeline: hand over stage %s to phase %d: %w", name, k, err)
		}
		file := name + ".jsonl.zst"
		w, err := newHashWriter(filepath.Join(dir, file))
		if err != nil {
			return err
		}
		for ln, err := range outputLines(ctx, db, filepath.Join(merged, m.Output)) {
			if err != nil {
				w.a.Abort()
				return fmt.Errorf("pipeline: hand over stage %s: %w", name, err)
			}
			w.Write(ln.data)
			w.Write(newline)
		}
		if err := w.a.Commit(); err != nil {
			return err
		}
		idx[name] = handoffFile{File: file, OutHash: w.sum(), Items: w.lines}
	}
	if err := schema.WriteJSONAtomic(filepath.Join(dir, handoffIndex), idx); err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	return nil
}

// PlanHash identifies a pipeline file's phases, for a scheduler script made
// from them to check it still matches.
func PlanHash(phases []Phase) string {
	b, _ := json.Marshal(phases)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}
