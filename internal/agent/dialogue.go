package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/prompts"
	"github.com/codefeedback/codefeedback/schema"
)

// Labels an interact dialogue carries, enough to replay it.
const (
	LabelEnv      = "intercode_env"      // environment name
	LabelTask     = "intercode_task"     // the env.Task as JSON
	LabelReward   = "intercode_reward"   // the episode's reward (max over turns)
	LabelRewards  = "intercode_rewards"  // reward after each execution turn, space-separated
	LabelStrategy = "intercode_strategy" // prompting strategy
	LabelSubmit   = "intercode_submit"   // the final submit's action, when the episode ended with one
)

var dialoguePrompts = []string{"interact_task", "interact_closing"}

// DialoguePromptVersion names the dialogue templates with their text hashes.
func DialoguePromptVersion() (string, error) {
	return prompts.Versions(dialoguePrompts...)
}

// Dialogue turns an episode into a training dialogue: the task as the user
// turn; each model answer as an assistant turn followed by the real
// observation as an execution turn (with its record); an answer with no
// action followed by the notice the model got; and, for a solved task, a
// closing assistant turn. Submits are not turns of the dialogue; the labels
// record the environment, task, rewards and final submit so verify can
// replay it.
func (e Episode) Dialogue(stage string) (schema.Dialogue, error) {
	task, err := json.Marshal(e.Task)
	if err != nil {
		return schema.Dialogue{}, fmt.Errorf("agent: encode task: %w", err)
	}
	tt, err := prompts.Get("interact_task")
	if err != nil {
		return schema.Dialogue{}, err
	}
	first, err := tt.Render(map[string]any{"Query": e.Task.Query, "Env": e.Task.Env, "DB": e.Task.Setup[env.SetupDB]})
	if err != nil {
		return schema.Dialogue{}, err
	}
	lang := Lang(e.Task.Env)
	msgs := []schema.Message{{Role: schema.RoleUser, Content: first}}
	var rewards []string
	submit := ""
	for _, s := range e.Steps {
		if s.Submit {
			submit = s.Action
			continue
		}
		msgs = append(msgs, schema.Message{Role: schema.RoleAssistant, Content: strings.TrimSpace(s.Answer)})
		if s.Action == "" {
			msgs = append(msgs, schema.Message{Role: schema.RoleUser, Content: s.Observation})
			continue
		}
		exit := 0
		if !s.Valid {
			exit = 1
		}
		passed := s.Reward >= 1
		msgs = append(msgs, schema.Message{Role: schema.RoleExecution, Content: observationText(s.Observation),
			Exec: &schema.Execution{Language: lang, Code: s.Action, Driver: "intercode:" + e.Task.Env,
				ExitCode: exit, Stdout: s.Observation, Passed: &passed}})
		rewards = append(rewards, strconv.FormatFloat(s.Reward, 'g', -1, 64))
	}
	if len(rewards) == 0 {
		return schema.Dialogue{}, errors.New("agent: the episode ran no action")
	}
	if e.Success {
		ct, err := prompts.Get("interact_closing")
		if err != nil {
			return schema.Dialogue{}, err
		}
		closing, err := ct.Render(e.closingData())
		if err != nil {
			return schema.Dialogue{}, err
		}
		msgs = append(msgs, schema.Message{Role: schema.RoleAssistant, Content: closing})
	}
	status := "fail"
	if e.Success {
		status = "pass"
	}
	labels := map[string]string{
		LabelEnv: e.Task.Env, LabelTask: string(task), LabelReward: strconv.FormatFloat(e.Reward, 'g', -1, 64),
		LabelRewards: strings.Join(rewards, " "), LabelStrategy: e.Strategy, "final_status": status,
	}
	if submit != "" {
		labels[LabelSubmit] = submit
	}
	return schema.Dialogue{
		ID:       schema.StableID("dlg-interact", e.Task.ID, e.Strategy, e.Model),
		Messages: msgs, Stage: stage, Method: "intercode-" + e.Strategy, Model: e.Model,
		Sources: []string{e.Task.ID}, Labels: labels,
	}, nil
}

// closingData is what the closing turn may say: the result the last run
// showed (a short output, a single value, counts), never more, so the turn
// a model is trained on is true of the dialogue it ends.
func (e Episode) closingData() map[string]any {
	h := fnv.New32a()
	h.Write([]byte(e.Task.ID + "\x00" + e.Strategy + "\x00" + e.Model))
	d := map[string]any{"Env": e.Task.Env, "Variant": int(h.Sum32() % 4), "Result": "", "Rows": 0, "RowWord": "rows",
		"Lines": 0, "LineWord": "lines", "Quiet": false, "Function": "",
		"Counted": false, "Shown": 0, "Cut": false}
	var last, submit *Step
	for i := range e.Steps {
		switch s := &e.Steps[i]; {
		case s.Submit:
			submit = s
		case s.Action != "":
			last = s
		}
	}
	switch e.Task.Env {
	case "python":
		if submit != nil {
			if m := reTestsPassed.FindStringSubmatch(submit.Observation); m != nil && m[1] == m[2] {
				d["Result"] = "all " + m[2] + " tests"
				if m[2] == "1" {
					d["Result"] = "its test"
				}
				d["Function"] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(submit.Action), "submit"))
			}
		}
	case "ctf":
		if submit != nil {
			if f := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(submit.Action), "submit")); quotable(f) {
				d["Result"] = "`" + f + "`"
			}
		}
	case "sql":
		if last == nil {
			break
		}
		// The counts come from the result itself (sqlenv's Info), never
		// from the rendered table, whose footer may say it was cut.
		if n, shown, ok := rowCounts(last.Info); ok {
			d["Counted"], d["Rows"], d["Shown"], d["Cut"] = true, n, shown, shown < n
			if n == 1 {
				d["RowWord"] = "row"
			}
		}
		if v, ok := singleValue(last.Info["rows"]); ok {
			// Quote the cell as the table above shows it (11.0, not 11).
			if shown, ok := shownCell(last.Observation); ok {
				v = shown
			}
			if quotable(v) {
				d["Result"] = "`" + v + "`"
			}
		}
	default:
		if last == nil || !last.Valid {
			break
		}
		out := strings.TrimSpace(last.Observation)
		switch n := strings.Count(out, "\n") + 1; {
		case out == "":
			d["Quiet"] = true
		case n == 1 && quotable(out):
			d["Result"] = "`" + out + "`"
		default:
			d["Lines"] = n
			if n == 1 {
				d["LineWord"] = "line"
			}
		}
	}
	return d
}

var (
	reTestsPassed = regexp.MustCompile(`^(\d+) of (\d+) tests passed`)
)

// rowCounts reads how many rows a sql step returned and how many its table
// shows from the step's Info: env.InfoRowCount and env.InfoRowsShown, as
// numbers fresh or from a trajectory file. An episode stored before those
// keys existed gives the length of its rows; its table showed them all up
// to legacyShown rows, else an unknown number (shown 0: the closing then
// does not point at the table). ok is false when the step returned no
// result set.
func rowCounts(info map[string]any) (n, shown int, ok bool) {
	if n, ok = intValue(info[env.InfoRowCount]); ok {
		shown, sok := intValue(info[env.InfoRowsShown])
		if !sok || shown > n {
			shown = n
		}
		return n, shown, true
	}
	switch r := info["rows"].(type) {
	case [][]any:
		ok, n = r != nil, len(r)
	case []any:
		ok, n = r != nil, len(r)
	}
	if !ok {
		return 0, 0, false
	}
	if n <= legacyShown {
		shown = n
	}
	return n, shown, true
}

// legacyShown is how many rows sqlenv's tables showed before Info said so.
const legacyShown = 50

func intValue(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		return int(x), true
	case float64:
		return int(x), x == float64(int(x))
	case json.Number:
		n, err := x.Int64()
		return int(n), err == nil
	}
	return 0, false
}

// quotable: short enough to quote in a sentence, on one line, no backquote.
func quotable(s string) bool {
	return s != "" && len(s) <= 60 && !strings.ContainsAny(s, "`\n\r")
}

// singleValue is the one cell of a one-row, one-column result, as decoded
// fresh ([][]any) or from a trajectory file ([]any of []any).
func singleValue(rows any) (string, bool) {
	var row []any
	switch r := rows.(type) {
	case [][]any:
		if len(r) != 1 {
			return "", false
		}
		row = r[0]
	case []any:
		if len(r) != 1 {
			return "", false
		}
		row, _ = r[0].([]any)
	}
	if len(row) != 1 || row[0] == nil {
		return "", false
	}
	if f, ok := row[0].(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64), true
	}
	return strings.TrimSpace(fmt.Sprint(row[0])), true
}

// shownCell is the value cell of a one-row, one-column text table.
func shownCell(obs string) (string, bool) {
	var cells []string
	for _, l := range strings.Split(obs, "\n") {
		if strings.HasPrefix(l, "| ") && strings.HasSuffix(l, " |") && len(l) >= 4 {
			cells = append(cells, strings.TrimSpace(l[2:len(l)-2]))
		}
	}
	if len(cells) != 2 || strings.Contains(cells[1], " | ") {
		return "", false
	}
	return cells[1], true
}

func observationText(obs string) string {
	if strings.TrimSpace(obs) == "" {
		return "(no output)"
	}
	return obs
}

// IsInteract reports whether d is an interact dialogue that Replay can check.
func IsInteract(d *schema.Dialogue) bool {
	return d.Labels[LabelEnv] != "" && d.Labels[LabelTask] != ""
}

// ReplayStep is one execution turn re-run.
type ReplayStep struct {
	Turn                  int // message index
	Observation, Recorded string
	Reward, RecordedRew   float64
	Valid, RecordedValid  bool
}

// Replay re-executes an interact dialogue's actions in a fresh episode of
// its task in e and returns, per execution turn, what the environment says
// now next to what was recorded, and the episode's reward now (the best
// score over the turns, or the recorded final submit's) next to the
// recorded one. Scoring follows the recorded strategy: after every action,
// except for ReAct, where only the submit counts.
func Replay(ctx context.Context, e env.Env, d *schema.Dialogue) (steps []ReplayStep, reward, recorded float64, err error) {
	var t env.Task
	if err := json.Unmarshal([]byte(d.Labels[LabelTask]), &t); err != nil {
		return nil, 0, 0, fmt.Errorf("agent: dialogue %s: task label: %w", d.ID, err)
	}
	recorded, err = strconv.ParseFloat(d.Labels[LabelReward], 64)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("agent: dialogue %s: reward label: %w", d.ID, err)
	}
	recRewards := strings.Fields(d.Labels[LabelRewards])
	scoreEach := d.Labels[LabelStrategy] != ReAct
	if _, err := e.Reset(ctx, t); err != nil {
		return nil, 0, 0, fmt.Errorf("agent: dialogue %s: reset: %w", d.ID, err)
	}
	var defs []string
	k := 0
	for i, m := range d.Messages {
		if m.Role != schema.RoleExecution || m.Exec == nil {
			continue
		}
		res, err := e.Step(ctx, m.Exec.Code)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("agent: dialogue %s turn %d: %w", d.ID, i, err)
		}
		if t.Env == "python" {
			for _, mm := range reDef.FindAllStringSubmatch(m.Exec.Code, -1) {
				defs = append(defs, mm[1])
			}
		}
		st := ReplayStep{Turn: i, Observation: res.Observation, Recorded: m.Exec.Stdout, Reward: res.Reward,
			Valid: res.Valid, RecordedValid: m.Exec.ExitCode == 0}
		if k < len(recRewards) {
			st.RecordedRew, _ = strconv.ParseFloat(recRewards[k], 64)
		}
		k++
		if scoreEach && t.Env != "ctf" {
			arg := ""
			if len(defs) > 0 {
				arg = defs[len(defs)-1]
			}
			sc, err := e.Score(ctx, arg)
			if err != nil {
				return nil, 0, 0, fmt.Errorf("agent: dialogue %s turn %d: score: %w", d.ID, i, err)
			}
			st.Reward = sc.Reward
		}
		reward = max(reward, st.Reward)
		steps = append(steps, st)
	}
	if sub := d.Labels[LabelSubmit]; sub != "" {
		res, err := e.Step(ctx, sub)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("agent: dialogue %s: submit: %w", d.ID, err)
		}
		reward = max(reward, res.Reward)
	}
	return steps, reward, recorded, nil
}
