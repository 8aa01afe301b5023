package env

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/schema"
)

// Trajectory is one episode in InterCode's log format (the files under
// data/results/ of its repository): the actions an agent took, what it saw,
// the reward after each turn, whether each action ran, and a summary.
type Trajectory struct {
	Environment string      `json:"environment"` // "ic_bash", "ic_sql", "ic_python", "ic_ctf"
	Dataset     string      `json:"dataset"`     // the data file's path, as InterCode logs it
	TaskID      int         `json:"task_id"`
	Query       string      `json:"query"`
	TurnHistory TurnHistory `json:"turn_history"`
	Summary     Summary     `json:"summary"`
	// Hardness is Spider's difficulty label where InterCode logs it.
	Hardness string `json:"hardness,omitempty"`
}

// TurnHistory holds one entry per turn in each list. Rewards and validity
// may be null in InterCode's files (python logs null validity). Thoughts is
// ReAct's reasoning per turn (experiments/eval_react.py; its turn-limit
// submit is logged with the thought "EXCEEDED MAX TURNS: submit"); other
// strategies leave it out.
type TurnHistory struct {
	Thoughts     []string  `json:"thoughts,omitempty"`
	Actions      []string  `json:"actions"`
	Observations []string  `json:"observations"`
	Rewards      []float64 `json:"rewards"`
	ValidAction  []*bool   `json:"valid_action"`
}

// Summary is InterCode's per-episode summary.
type Summary struct {
	MaxReward    float64 `json:"max_reward"`
	MaxRewardIdx int     `json:"max_reward_idx"`
	TurnsTaken   int     `json:"turns_taken"`
	TurnsMax     int     `json:"turns_max"`
}

// LoggedDataset is a task file's path as InterCode logs it in a
// trajectory: relative to its repository, "./data/..." (a task file under a
// checkout or the fetch cache, /cache/intercode/data/sql/spider/x.json, is
// "./data/sql/spider/x.json"), never the absolute path of this machine; a
// file outside such a layout is logged by its name.
func LoggedDataset(path string) string {
	p := filepath.ToSlash(path)
	if strings.HasPrefix(p, "./data/") {
		return p
	}
	if p == "" {
		return ""
	}
	if i := strings.LastIndex("/"+p, "/data/"); i >= 0 {
		return "./" + ("/" + p)[i+1:]
	}
	return "./" + filepath.Base(path)
}

// EnvName maps InterCode's environment names ("ic_sql") to ours ("sql").
func EnvName(environment string) string {
	switch environment {
	case "ic_bash":
		return "bash"
	case "ic_sql":
		return "sql"
	case "ic_python":
		return "python"
	case "ic_ctf":
		return "ctf"
	}
	return environment
}

// ICName maps our environment names to InterCode's ("sql" -> "ic_sql").
func ICName(env string) string {
	switch env {
	case "bash", "sql", "python", "ctf":
		return "ic_" + env
	}
	return env
}

// Add appends one turn and updates the summary.
func (t *Trajectory) Add(action, observation string, reward float64, valid bool) {
	h := &t.TurnHistory
	h.Actions = append(h.Actions, action)
	h.Observations = append(h.Observations, observation)
	h.Rewards = append(h.Rewards, reward)
	v := valid
	h.ValidAction = append(h.ValidAction, &v)
	t.Summary.TurnsTaken = len(h.Actions)
	if len(h.Rewards) == 1 || reward > t.Summary.MaxReward {
		t.Summary.MaxReward, t.Summary.MaxRewardIdx = reward, len(h.Rewards)-1
	}
}

// Success is InterCode's success: a turn reached reward 1.
func (t Trajectory) Success() bool { return t.Summary.MaxReward >= 1 }

// ReadTrajectories reads a trajectory file: InterCode's results files map
// "0", "1", ... to trajectories; a JSON array or a single trajectory is also
// accepted. The result is ordered by key (numerically where keys are numbers).
func ReadTrajectories(path string) ([]Trajectory, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("env: reading trajectories: %w", err)
	}
	var byKey map[string]Trajectory
	if err := json.Unmarshal(data, &byKey); err == nil && len(byKey) > 0 {
		if _, single := byKey["turn_history"]; !single {
			keys := make([]string, 0, len(byKey))
			for k := range byKey {
				keys = append(keys, k)
			}
			sort.Slice(keys, func(i, j int) bool {
				a, ea := strconv.Atoi(keys[i])
				b, eb := strconv.Atoi(keys[j])
				if ea == nil && eb == nil {
					return a < b
				}
				return keys[i] < keys[j]
			})
			out := make([]Trajectory, 0, len(keys))
			for _, k := range keys {
				out = append(out, byKey[k])
			}
			return out, nil
		}
	}
	var list []Trajectory
	if err := json.Unmarshal(data, &list); err == nil {
		return list, nil
	}
	var one Trajectory
	if err := json.Unmarshal(data, &one); err != nil {
		return nil, fmt.Errorf("env: %s is not an InterCode trajectory file: %w", path, err)
	}
	return []Trajectory{one}, nil
}

// WriteTrajectories writes trajectories as InterCode does: an object keyed
// by the position ("0", "1", ...), indented.
func WriteTrajectories(path string, ts []Trajectory) error {
	m := make(map[string]Trajectory, len(ts))
	for i, t := range ts {
		m[strconv.Itoa(i)] = t
	}
	if err := schema.WriteJSONAtomic(path, m); err != nil {
		return fmt.Errorf("env: writing trajectories: %w", err)
	}
	return nil
}
