package env

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// StepAgreement compares one logged turn with its re-execution.
type StepAgreement struct {
	Action    string  `json:"action"`
	Logged    float64 `json:"logged_reward"`
	Ours      float64 `json:"our_reward"`
	Agree     bool    `json:"agree"`
	Skipped   string  `json:"skipped,omitempty"` // why the turn was not executed
	OurObs    string  `json:"our_observation,omitempty"`
	LoggedObs string  `json:"logged_observation,omitempty"`
	GoldObs   string  `json:"gold_observation,omitempty"` // the gold's output here, where the environment reports it
	// Cause names why a step disagrees (one of the Disagree constants);
	// "" where it agrees.
	Cause string `json:"cause,omitempty"`
}

// Why a replayed step's reward differs from InterCode's logged one.
const (
	// DisagreeLog: InterCode rewarded code whose own logged observation
	// is an error (a syntax error: the function could not have been
	// defined from that code). Not an inconsistent log after all: its
	// reward ran the gold in the agent's interpreter and left it there,
	// so a later reward tested the gold's function. Python replays with
	// entry "first" (the default) reproduce that and do not see these;
	// entry "tested" does.
	DisagreeLog = "log_inconsistent"
	// DisagreeNetwork: the step or the gold needed the network, which
	// InterCode's containers had and sandboxes never reach.
	DisagreeNetwork = "network"
	// DisagreeMachine: the result depends on the machine or the moment:
	// times, ages and clocks (date, -mmin, ps, uptime), or a time limit
	// reached on one side only.
	DisagreeMachine = "machine"
	// DisagreeTie: the gold's ORDER BY ... LIMIT cuts through tied sort
	// keys; which tied rows InterCode's MySQL returned is arbitrary.
	DisagreeTie = "tie"
	// DisagreeGold: the gold does not run here (MySQL-8-only syntax).
	DisagreeGold = "gold_error"
	// DisagreeAlias: InterCode bound the submitted function to the gold's
	// first def, a helper its tests never call, so the tests called a name
	// the agent's code never defined and failed; ours binds the function
	// the tests call.
	DisagreeAlias = "intercode_alias"
	// DisagreeEngine: MariaDB is not InterCode's MySQL 8: the statement
	// gave other rows there, or failed on one engine only (MySQL 8's
	// ONLY_FULL_GROUP_BY, date functions).
	DisagreeEngine = "engine"
	// DisagreeGoldThere: the statement gave the same rows there, so the
	// gold's result differed there: an empty answer InterCode scored 1
	// proves its gold returned nothing or failed (which InterCode scores
	// as empty), while here it returns rows.
	DisagreeGoldThere = "gold_there"
	// DisagreeOurs: none of the above: a difference of ours.
	DisagreeOurs = "ours"
)

// Unreproducible reports whether a cause lies outside what a replay can
// reproduce (all but DisagreeOurs).
func Unreproducible(cause string) bool { return cause != "" && cause != DisagreeOurs }

// ReplayResult is one trajectory re-executed.
type ReplayResult struct {
	TaskID        int             `json:"task_id"`
	Steps         []StepAgreement `json:"steps"`
	LoggedSuccess bool            `json:"logged_success"`
	OurSuccess    bool            `json:"our_success"`
	// Network: the gold's or the agent's output here shows a command that
	// found no network (NetworkFailure) where InterCode's logged output did
	// not: sandboxes never reach it, InterCode's containers did, so this
	// trajectory cannot be reproduced and is reported apart.
	Network bool `json:"network,omitempty"`
	// Cause names why success disagrees (the cause of the step where one
	// side first reached reward 1); "" where it agrees.
	Cause string     `json:"cause,omitempty"`
	Ours  Trajectory `json:"trajectory"` // our re-execution in InterCode's format
}

// RewardTolerance is how far a re-executed reward may be from the logged
// one and still agree (InterCode rounds its rewards to 2 places).
const RewardTolerance = 0.011

var (
	defRE     = regexp.MustCompile(`^def\s+(\w+)\s*\(`)
	nonCodeRE = regexp.MustCompile(`^No \w+ code`)
	submitCTF = regexp.MustCompile(`^submit\b`)
)

// Replay re-executes a trajectory logged by InterCode's n-turn experiments
// (experiments/eval_n_turn.py) in e, which must be reset to the trajectory's
// task first: bash and sql actions run and are then scored as `submit`
// (without ending the episode); a python action that defines a function is
// run and scored as `submit <its name>`, other python actions score 0; ctf
// actions score only when they submit. Turns the policy did not turn into
// code (logged observation "No <lang> code ...") and "blocked" turns are not
// executed and score 0, as InterCode logged them.
func Replay(ctx context.Context, e Env, envName string, tr Trajectory) (ReplayResult, error) {
	res := ReplayResult{TaskID: tr.TaskID, LoggedSuccess: tr.Summary.MaxReward >= 1}
	res.Ours = Trajectory{Environment: tr.Environment, Dataset: tr.Dataset, TaskID: tr.TaskID, Query: tr.Query,
		Hardness: tr.Hardness, Summary: Summary{TurnsMax: tr.Summary.TurnsMax}}
	h := tr.TurnHistory
	// A ReAct log (eval_react.py): actions are "execute[CODE]" or
	// "submit", and only the submit is scored.
	react := len(h.Thoughts) > 0
	for i, action := range h.Actions {
		logged := 0.0
		if i < len(h.Rewards) {
			logged = h.Rewards[i]
		}
		loggedObs := ""
		if i < len(h.Observations) {
			loggedObs = h.Observations[i]
		}
		sa := StepAgreement{Action: action, Logged: logged, LoggedObs: loggedObs}
		var r StepResult
		var err error
		switch {
		case action == "blocked":
			sa.Skipped = "blocked: the policy failed"
		case nonCodeRE.MatchString(loggedObs):
			sa.Skipped = "not code: the policy's retry message"
			r.Observation = loggedObs
		case action == "skip":
			sa.Skipped = "skip"
		case react:
			r, err = replayReActStep(ctx, e, action)
			if err != nil {
				return res, fmt.Errorf("task %d turn %d: %w", tr.TaskID, i, err)
			}
		default:
			r, err = replayStep(ctx, e, envName, action)
			if err != nil {
				return res, fmt.Errorf("task %d turn %d: %w", tr.TaskID, i, err)
			}
		}
		sa.Ours = r.Reward
		sa.OurObs = r.Observation
		g, _ := r.Info["gold_obs"].(string)
		sa.GoldObs = g
		// InterCode's run had the network where its logged output shows no
		// failure; then a gold that found none here, or an agent whose
		// output differs because it found none, cannot be reproduced.
		agentNet := (NetworkFailure(r.Observation) || networkTimeout(action, r.Observation)) && r.Observation != loggedObs
		if !NetworkFailure(loggedObs) && (NetworkFailure(g) || agentNet) {
			res.Network = true
		}
		sa.Agree = math.Abs(sa.Ours-sa.Logged) <= RewardTolerance
		if !sa.Agree {
			sa.Cause = stepCause(envName, sa, r)
		}
		res.Steps = append(res.Steps, sa)
		res.Ours.Add(action, r.Observation, r.Reward, r.Valid)
		if react && i < len(h.Thoughts) {
			res.Ours.TurnHistory.Thoughts = append(res.Ours.TurnHistory.Thoughts, h.Thoughts[i])
		}
		if r.Reward >= 1 {
			res.OurSuccess = true
		}
		if action == "blocked" || action == "skip" || r.Done {
			break
		}
	}
	if res.LoggedSuccess != res.OurSuccess {
		res.Cause = successCause(res)
	}
	return res, nil
}

// successCause is the cause of a success disagreement: that of the first
// step where the side that succeeded reached reward 1 and the other did
// not; a trajectory that needed the network is the network's.
func successCause(res ReplayResult) string {
	if res.Network {
		return DisagreeNetwork
	}
	for _, s := range res.Steps {
		if s.Agree {
			continue
		}
		if (res.LoggedSuccess && s.Logged >= 1) || (res.OurSuccess && s.Ours >= 1) {
			return s.Cause
		}
	}
	return DisagreeOurs
}

// sqlEngineCause compares a sql step's result with InterCode's logged
// observation of the same statement: an error on one side only, or other
// rows, is the engine's; the same rows scored differently, the gold's
// result there.
func sqlEngineCause(sa StepAgreement, r StepResult) string {
	loggedErr := strings.HasPrefix(sa.LoggedObs, "Error executing query")
	_, oursErr := r.Info["error"]
	if loggedErr != oursErr {
		return DisagreeEngine
	}
	if loggedErr {
		return ""
	}
	rows, ok := r.Info[InfoPyRows].(string)
	if !ok {
		return ""
	}
	if rows != strings.TrimSpace(sa.LoggedObs) {
		return DisagreeEngine
	}
	return DisagreeGoldThere
}

// helperBound: InterCode bound the submitted function to a helper: the
// gold's first def is not the function the tests call, and the submitted
// function is not named as the tested one.
func helperBound(info map[string]any) bool {
	first, _ := info[InfoFirstDef].(string)
	entry, _ := info["entry"].(string)
	sub, _ := info["submitted_function"].(string)
	return first != "" && entry != "" && first != entry && sub != entry
}

// pyErrorRE: InterCode's python observation of code that failed,
// {'error': 'Error: invalid syntax (<string>, line 6)'}.
var pyErrorRE = regexp.MustCompile(`'error': '(Error: )?[^']`)

// stepCause names why a step's reward differs from the logged one.
func stepCause(envName string, sa StepAgreement, r StepResult) string {
	switch {
	case envName == "python" && sa.Logged > sa.Ours && pyErrorRE.MatchString(sa.LoggedObs):
		return DisagreeLog
	case NetworkFailure(sa.OurObs) && !NetworkFailure(sa.LoggedObs), NetworkFailure(sa.GoldObs):
		return DisagreeNetwork
	case envName == "python" && sa.Ours > sa.Logged && helperBound(r.Info):
		return DisagreeAlias
	}
	if _, ok := r.Info[InfoGoldError]; ok {
		return DisagreeGold
	}
	if n, _ := r.Info[InfoTies].(int); n > 1 {
		return DisagreeTie
	}
	if envName == "sql" {
		if c := sqlEngineCause(sa, r); c != "" {
			return c
		}
	}
	timedOut := func(s string) bool {
		return strings.Contains(s, "timed out") || strings.Contains(s, "Timeout") || strings.Contains(s, "TimeoutError")
	}
	if timedOut(sa.OurObs) != timedOut(sa.LoggedObs) {
		return DisagreeMachine
	}
	if (envName == "bash" || envName == "ctf") && clockRE.MatchString(sa.Action) {
		return DisagreeMachine
	}
	return DisagreeOurs
}

// networkRE matches what the usual network clients print when no network
// is there: name resolution and connection failures of curl, wget, dig,
// host, nslookup, ping, git and Python.
var networkRE = regexp.MustCompile(`(?m)(Could not resolve host|Failed to connect to|unable to resolve host address|` +
	`no servers could be reached|communications error to|couldn't get address for|` +
	`Temporary failure in name resolution|Name or service not known|Network is unreachable|` +
	`Cannot assign requested address|Could not resolve hostname|nodename nor servname)`)

// NetworkFailure reports whether an output shows a command that needed the
// network and found none.
func NetworkFailure(out string) bool { return networkRE.MatchString(out) }

// networkClientRE names the network clients that wait out their retries
// when no server answers (dig tries 3 times 5 s) rather than fail at once.
var networkClientRE = regexp.MustCompile(`\b(curl|wget|dig|nslookup|ping|traceroute|telnet|ssh|ftp)\b`)

// networkTimeout: an action that runs a network client was cut at the time
// limit, which is how a client that waits for an absent server ends.
func networkTimeout(action, out string) bool {
	return out == "Command timed out" && networkClientRE.MatchString(action)
}

var executeRE = regexp.MustCompile(`(?s)^\s*execute\[(.*)\]\s*$`)

// replayReActStep runs one ReAct action: execute[CODE] runs CODE (reward
// 0), submit scores and ends the episode, anything else is the policy's
// unparsed action (InterCode's "did not contain code" turn).
func replayReActStep(ctx context.Context, e Env, action string) (StepResult, error) {
	if m := executeRE.FindStringSubmatch(action); m != nil {
		st, err := e.Step(ctx, m[1])
		st.Reward = 0
		return st, err
	}
	if _, ok := SubmitArg(strings.TrimSpace(action)); ok {
		return e.Step(ctx, strings.TrimSpace(action))
	}
	return StepResult{}, nil
}

func replayStep(ctx context.Context, e Env, envName, action string) (StepResult, error) {
	switch envName {
	case "python":
		if m := defRE.FindStringSubmatch(strings.TrimSpace(action)); m != nil {
			st, err := e.Step(ctx, action)
			if err != nil {
				return st, err
			}
			sc, err := e.Score(ctx, m[1])
			if err != nil {
				return sc, err
			}
			sc.Observation, sc.Valid = st.Observation, st.Valid
			return sc, nil
		}
		st, err := e.Step(ctx, action)
		st.Reward = 0
		return st, err
	case "ctf":
		if submitCTF.MatchString(strings.TrimSpace(action)) {
			arg, _ := SubmitArg(action)
			return e.Score(ctx, arg)
		}
		st, err := e.Step(ctx, action)
		st.Reward = 0
		return st, err
	default: // bash, sql: act, then score as submit and go on
		st, err := e.Step(ctx, action)
		if err != nil || st.Done {
			return st, err
		}
		sc, err := e.Score(ctx, "")
		if err != nil {
			return sc, err
		}
		st.Reward = sc.Reward
		for _, k := range []string{"gold_obs", InfoGoldError, InfoTies} {
			if v, ok := sc.Info[k]; ok {
				if st.Info == nil {
					st.Info = map[string]any{}
				}
				st.Info[k] = v
			}
		}
		return st, nil
	}
}

// dataFiles are the task files of InterCode's datasets (GuessDataset's
// names) in its repository layout.
var dataFiles = map[string]string{
	"nl2bash": "data/nl2bash/test_queries.json", // a log that names no file system
	"spider":  "data/sql/spider/ic_spider_dev.json",
	"bird":    "data/sql/bird/ic_bird.json",
	"wikisql": "data/sql/wikisql/ic_wikisql_dev.json",
	"ic_mbpp": "data/python/mbpp/ic_mbpp.json",
	"ctf":     "data/ctf/ic_ctf.json",
}

var nl2bashFS = regexp.MustCompile(`fs_(\d)`)

// DataFileFor maps the dataset path InterCode logs in a trajectory
// ("./data/nl2bash/nl2bash_fs_1.json", "./data/spider/dev_spider.json") to
// the task file's path in InterCode's repository layout.
func DataFileFor(dataset string) string {
	d := GuessDataset(dataset)
	if m := nl2bashFS.FindStringSubmatch(strings.ToLower(dataset)); d == "nl2bash" && m != nil {
		return "data/nl2bash/nl2bash_fs_" + m[1] + ".json"
	}
	return dataFiles[d]
}
