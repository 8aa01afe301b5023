package bashenv

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// InterCode's shell ("shell: intercode"). InterCode does not keep a shell:
// every action is its own `docker exec` of the string
//
//	/bin/bash -c "ACTION"
//
// which docker-py splits with Python's shlex.split, so the double quotes
// inside ACTION close and reopen that string: `echo " a b " | tr -d x`
// runs `bash -c 'echo ' a b ' | tr -d x'` (prints an empty line), an odd
// number of quotes fails as "Malformed command". Only the working directory
// carries from one action to the next, and only through actions that start
// with "cd". Its published rewards were computed on those semantics, so a
// replay must run them too; agents of our own get the real session.

// ShellSession and ShellInterCode are the values of Params["shell"].
const (
	ShellSession   = "session"
	ShellInterCode = "intercode"
)

// errNoClosingQuote and errNoEscaped are shlex.split's two ValueErrors,
// capitalized as Python's: the agent sees them verbatim.
var (
	//lint:ignore ST1005 shlex's own message, shown to the agent as InterCode shows it
	errNoClosingQuote = errors.New("No closing quotation")
	//lint:ignore ST1005 shlex's own message, shown to the agent as InterCode shows it
	errNoEscaped = errors.New("No escaped character")
)

// shlexSplit is Python's shlex.split(s) (POSIX mode, no comments,
// whitespace_split): words separated by space, tab, CR, LF; backslash
// escapes any character outside quotes and only `"` and `\` inside double
// quotes; nothing inside single quotes; adjacent quoted and unquoted parts
// join into one word; "" is an empty word.
func shlexSplit(s string) ([]string, error) {
	const (
		stSpace = iota
		stWord
		stSingle
		stDouble
		stEscape
	)
	var out []string
	var tok strings.Builder
	state, escaped := stSpace, stWord // escaped: the state an escape returns to
	quoted := false
	emit := func() {
		if tok.Len() > 0 || quoted {
			out = append(out, tok.String())
		}
		tok.Reset()
		quoted = false
	}
	for _, r := range s {
		switch state {
		case stSpace, stWord:
			switch {
			case r == ' ' || r == '\t' || r == '\r' || r == '\n':
				if state == stWord {
					emit()
				}
				state = stSpace
			case r == '\\':
				escaped, state = stWord, stEscape
			case r == '\'':
				state, quoted = stSingle, true
			case r == '"':
				state, quoted = stDouble, true
			default:
				tok.WriteRune(r)
				state = stWord
			}
		case stSingle:
			if r == '\'' {
				state = stWord
			} else {
				tok.WriteRune(r)
			}
		case stDouble:
			switch r {
			case '"':
				state = stWord
			case '\\':
				escaped, state = stDouble, stEscape
			default:
				tok.WriteRune(r)
			}
		case stEscape:
			// In double quotes a backslash stays unless it escapes " or \.
			if escaped == stDouble && r != '"' && r != '\\' {
				tok.WriteByte('\\')
			}
			tok.WriteRune(r)
			state = escaped
		}
	}
	switch state {
	case stSingle, stDouble:
		return nil, errNoClosingQuote
	case stEscape:
		return nil, errNoEscaped
	case stWord:
		emit()
	}
	return out, nil
}

// cleanCmd is BashEnv.clean_cmd followed by docker-py's split: the argv
// InterCode's container runs for an action.
func cleanCmd(action string) ([]string, error) {
	return shlexSplit(`/bin/bash -c "` + strings.TrimSpace(action) + `"`)
}

// simplifyPath is BashEnv.simplify_path: the working directory after
// `cd changed` from current, resolved textually (".." above / stays at /).
func simplifyPath(current, changed string) string {
	if changed == "" {
		return current
	}
	if changed[0] == '/' {
		current = ""
	}
	var path []string
	for _, seg := range strings.Split(current+"/"+changed, "/") {
		switch seg {
		case "..":
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
		case "", ".":
		default:
			path = append(path, seg)
		}
	}
	return "/" + strings.Join(path, "/")
}

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ociChdirFailure is what `docker exec` prints when the working directory
// InterCode tracked does not exist (a `cd` whose argument was not a plain
// path, e.g. "cd /testbed && ls", leaves the whole string as the workdir).
func ociChdirFailure(dir string) string {
	return "OCI runtime exec failed: exec failed: unable to start container process: chdir to cwd (" +
		strconv.Quote(dir) + ") set in config.json failed: no such file or directory: unknown\r\n"
}

// icResult is one InterCode exec: its observation and whether it counts as
// executed (exit status 0).
type icResult struct {
	obs   string
	valid bool
}

// Actions of shell "intercode" run one of two ways (Params["actions"]):
// ActionsDirect (the default) from a Python session, which starts the
// action's argv itself; ActionsCells as a script in the runner's bash
// session, the way they ran before. The result is the same; the costs are
// not: a bash cell starts a bash that restores and saves the session's
// state (three processes) before the script's own `env`, bash and cat,
// where the Python session starts only the action's bash. Under load
// process creation is what an action costs (on docker at load 8, a bash
// cell took 330 ms and a Python cell 3 ms). InterCode's shell keeps no
// state between actions, so the bash session's state is not missed.
const (
	ActionsDirect = "direct"
	ActionsCells  = "cells"
)

// actionsFor resolves Params["actions"].
func actionsFor(param string) (string, error) {
	switch param {
	case "", ActionsDirect:
		return ActionsDirect, nil
	case ActionsCells:
		return ActionsCells, nil
	}
	return "", fmt.Errorf("bashenv: actions %q: want %s or %s", param, ActionsDirect, ActionsCells)
}

// icDirect is the Python cell that runs one InterCode exec: it enters the
// directory (docker's error if it cannot), starts argv with exactly the
// environment given, stdin /dev/null and stderr merged into stdout, copies
// that output to its own until every writer is gone (as docker exec reads
// it), and exits with the action's status (128+N for signal N, as bash
// reports it). Arguments are base64 so any byte passes. It imports only
// modules written in C (a fresh kernel after every reset would otherwise
// import subprocess each episode) and spawns with posix_spawn, putting
// back the signals Python ignores.
const icDirect = `import binascii as _b, os as _o, signal as _g
def _cf(d, env, argv, oci):
    env = dict(kv.split(b"=", 1) for kv in _b.a2b_base64(env).split(b"\0") if kv)
    argv = _b.a2b_base64(argv).split(b"\0")
    try:
        _o.chdir(_b.a2b_base64(d))
    except OSError:
        _o.write(1, _b.a2b_base64(oci))
        raise SystemExit(126)
    r, w = _o.pipe()
    pid = _o.posix_spawn(argv[0], argv, env, setsigdef=(_g.SIGPIPE, _g.SIGXFSZ),
        file_actions=[(_o.POSIX_SPAWN_OPEN, 0, "/dev/null", _o.O_RDONLY, 0), (_o.POSIX_SPAWN_DUP2, w, 1), (_o.POSIX_SPAWN_DUP2, w, 2)])
    _o.close(w)
    while True:
        b = _o.read(r, 65536)
        if not b:
            break
        while b:
            b = b[_o.write(1, b):]
    _o.close(r)
    rc = _o.waitstatus_to_exitcode(_o.waitpid(pid, 0)[1])
    raise SystemExit(128 - rc if rc < 0 else rc)
`

// icExec runs action as InterCode's exec_run would, in dir, on sd.
func icExec(ctx context.Context, sd *side, dir, action string) (icResult, error) {
	argv, err := cleanCmd(action)
	if err != nil {
		// docker-py raises before anything runs; exec_action's bare except.
		return icResult{obs: "Malformed command"}, nil
	}
	sd.cdRoot = false // the cell does its own cd
	var code string
	if sd.direct {
		b64 := func(parts []string) string {
			return base64.StdEncoding.EncodeToString([]byte(strings.Join(parts, "\x00")))
		}
		code = fmt.Sprintf("%s_cf(%q, %q, %q, %q)\n", icDirect, b64([]string{dir}), b64(sd.env), b64(argv), b64([]string{ociChdirFailure(dir)}))
	} else {
		var b strings.Builder
		// The cell runs in /, then enters dir: a missing dir is docker's error.
		fmt.Fprintf(&b, "exec 2>&1\ncd -- %s 2>/dev/null || { printf '%%s' %s; exit 126; }\n", shQuote(dir), shQuote(ociChdirFailure(dir)))
		// docker exec gives the command the container's environment only, and
		// reads its output until every writer is gone: a gold ending in `&`
		// (fs_1 #11) prints after its shell has exited, so the output goes
		// through cat, which waits for those writers too.
		b.WriteString("env -i")
		for _, a := range append(sd.env, argv...) {
			b.WriteString(" " + shQuote(a))
		}
		b.WriteString(" 2>&1 | cat; exit ${PIPESTATUS[0]}")
		code = b.String()
	}
	res, err := sd.s.Exec(ctx, code)
	if err != nil {
		return icResult{}, err
	}
	if res.TimedOut {
		return icResult{obs: "Command timed out"}, nil
	}
	// output.decode("utf-8") raising lands in the same bare except.
	if !utf8.ValidString(res.Stdout) || !utf8.ValidString(res.Stderr) {
		return icResult{obs: "Malformed command"}, nil
	}
	return icResult{obs: res.Stdout + res.Stderr, valid: res.OK()}, nil
}

// icStep is BashEnv.exec_action: an action starting with "cd" is rewritten
// to `cd <resolved path>` and run from /; when it succeeds, the resolved
// path becomes the working directory of the actions after it.
func (e *Env) icStep(ctx context.Context, action string) (icResult, error) {
	dir := e.workdir
	if strings.HasPrefix(action, "cd") {
		if i := strings.Index(action, "cd "); i >= 0 {
			p := simplifyPath(e.workdir, strings.TrimSpace(action[i+3:]))
			r, err := icExec(ctx, e.agent, "/", "cd "+p)
			if err == nil && r.valid {
				e.workdir = p
			}
			return r, err
		}
	}
	return icExec(ctx, e.agent, dir, action)
}

// icGold runs the gold command as BashEnv.get_reward does: through the same
// quoting, from /, with no time limit but the session's. ok is false when
// InterCode could not run it (CORRUPT_GOLD: its output is None, which no
// agent output equals).
func icGold(ctx context.Context, sd *side, gold string) (obs string, ok bool, err error) {
	if _, err := cleanCmd(gold); err != nil {
		return "", false, nil
	}
	r, err := icExec(ctx, sd, "/", gold)
	if err != nil || r.obs == "Malformed command" {
		return "", false, err
	}
	return r.obs, true, nil
}
