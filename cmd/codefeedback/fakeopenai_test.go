package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/rogpeppe/go-internal/testscript"
	openai "github.com/sashabaranov/go-openai"
)

// fakeKey finds a script's fakeHolder in its testscript values.
type fakeKey struct{}

// fakeHolder is one script's fake model endpoint and the chat-request count
// at its last `fakeopenai count`.
type fakeHolder struct {
	mu        sync.Mutex
	srv       *llmtest.Server
	seen      int
	batchMark int // batches already listed by `fakeopenai batches`
}

const chatPath = "/v1/chat/completions"

// cmdFakeOpenAI is the script command for a scripted OpenAI-compatible
// endpoint on 127.0.0.1 (pipeline/llm/llmtest, the real wire protocol):
//
//	fakeopenai start     starts it for the rest of the script and sets
//	                     $FAKE_OPENAI_URL (its base URL, ending in /v1);
//	                     it answers with fakeModelReply
//	fakeopenai count N   asserts that exactly N chat requests arrived since
//	                     the previous count (or the start); with `!`, that
//	                     the number is not N
//	fakeopenai batchpolls N   batches stay in progress for N status polls
//	fakeopenai waitbatches N  waits until N batches are unfinished (submitted, not done)
//	fakeopenai batches   prints batches=B requests=R stages=S:N,... of the
//	                     batches created since the previous `batches` (N
//	                     batches of stage S); fails if a request was
//	                     submitted in two of them
//
// The server requires "Bearer fake-key", so a script must `env FAKE_KEY=fake-key`
// and name FAKE_KEY as the pipeline's api_key_env.
func cmdFakeOpenAI(t *testing.T, ts *testscript.TestScript, neg bool, args []string) {
	h := ts.Value(fakeKey{}).(*fakeHolder)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case len(args) == 1 && args[0] == "start":
		if neg || h.srv != nil {
			ts.Fatalf("usage: fakeopenai start (once, without !)")
		}
		// llmtest.New registers Close with the outer test; the script's own
		// Defer closes it as soon as this script ends (Close is idempotent).
		h.srv = llmtest.New(t, llmtest.WithKey("fake-key"), llmtest.WithModels("fake-coder"))
		h.srv.Script(fakeModelReply)
		ts.Defer(h.srv.Close)
		ts.Setenv("FAKE_OPENAI_URL", h.srv.URL)
	case len(args) == 2 && args[0] == "count":
		if h.srv == nil {
			ts.Fatalf("fakeopenai count: no server; run `fakeopenai start` first")
		}
		want, err := strconv.Atoi(args[1])
		if err != nil {
			ts.Fatalf("fakeopenai count: bad number %q", args[1])
		}
		total := h.srv.Calls(chatPath)
		got := total - h.seen
		h.seen = total
		ts.Logf("fakeopenai: %d chat requests since the last count (%d in all, %d rejected for the key)", got, total, h.srv.AuthFailures())
		if neg && got == want {
			ts.Fatalf("fakeopenai count: got %d chat requests, want any other number", got)
		}
		if !neg && got != want {
			ts.Fatalf("fakeopenai count: got %d chat requests, want %d", got, want)
		}
	case len(args) == 2 && args[0] == "batchpolls":
		n, err := strconv.Atoi(args[1])
		if err != nil || h.srv == nil {
			ts.Fatalf("usage: fakeopenai batchpolls N (after start)")
		}
		h.srv.BatchPolls(n)
	case len(args) == 2 && args[0] == "waitbatches":
		n, err := strconv.Atoi(args[1])
		if err != nil || h.srv == nil {
			ts.Fatalf("usage: fakeopenai waitbatches N (after start)")
		}
		// A batch counts once the client polled it: it polls only after
		// recording the batch in the run store, so a kill after this finds
		// it there (a fixed pause here lost that race under load).
		open := func() int {
			k := 0
			for _, b := range h.srv.Batches() {
				if (b.Status == "validating" || b.Status == "in_progress") && h.srv.Calls("/v1/batches/"+b.ID) > 0 {
					k++
				}
			}
			return k
		}
		deadline := time.Now().Add(2 * time.Minute)
		for open() < n && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if got := open(); got < n {
			ts.Fatalf("fakeopenai waitbatches: %d unfinished batches after 2m, want %d", got, n)
		}
	case len(args) == 1 && args[0] == "batches":
		// Prints the batches and fails if any request was submitted in two.
		if h.srv == nil {
			ts.Fatalf("fakeopenai batches: no server")
		}
		seen := map[string]string{}
		all := h.srv.Batches()
		since := all[min(h.batchMark, len(all)):]
		h.batchMark = len(all)
		stages := map[string]int{}
		for _, b := range since {
			// The client names a batch file codefeedback-STAGE-NANOS-SEQ.jsonl.
			name := h.srv.BatchFileName(b.ID)
			if f := strings.Split(strings.TrimPrefix(name, "codefeedback-"), "-"); len(f) >= 3 {
				stages[strings.Join(f[:len(f)-2], "-")]++
			}
			ts.Logf("batch %s (%s): %s, %d requests", b.ID, name, b.Status, b.RequestCounts.Total)
			for _, id := range h.srv.BatchRequestIDs(b.ID) {
				if prev, dup := seen[id]; dup {
					ts.Fatalf("request %s submitted in batch %s and again in %s", id, prev, b.ID)
				}
				seen[id] = b.ID
			}
		}
		var per []string
		for st, n := range stages {
			per = append(per, fmt.Sprintf("%s:%d", st, n))
		}
		sort.Strings(per)
		fmt.Fprintf(ts.Stdout(), "batches=%d requests=%d stages=%s\n", len(since), len(seen), strings.Join(per, ","))
	default:
		ts.Fatalf("usage: fakeopenai start | count N | batchpolls N | waitbatches N | batches")
	}
}

// fakeSolutions holds, per function name of the problems and queries in
// model_run.txtar, the plan and code the fake writer answers with. Only
// "running_total" has a first answer with a real bug (an undefined name).
var fakeSolutions = map[string]struct{ plan, code, buggy string }{
	"count_vowels": {
		plan: "I walk over the letters and count those that are vowels.",
		code: "def count_vowels(word):\n    return sum(1 for letter in word if letter in 'aeiou')\n\nprint(count_vowels('banana'))",
	},
	"running_total": {
		plan:  "I keep a running sum and append it after each number.",
		code:  "def running_total(numbers):\n    totals = []\n    total = 0\n    for number in numbers:\n        total += number\n        totals.append(total)\n    return totals\n\nprint(running_total([1, 2, 3]))",
		buggy: "def running_total(numbers):\n    totals = []\n    total = 0\n    for number in numbers:\n        total += number\n        totals.append(totl)\n    return totals\n\nprint(running_total([1, 2, 3]))",
	},
	"reverse_words": {
		plan: "I split the sentence on spaces, reverse the list and join it again.",
		code: "def reverse_words(sentence):\n    return ' '.join(reversed(sentence.split()))\n\nprint(reverse_words('hello big world'))",
	},
	"word_lengths": {
		plan: "A dictionary comprehension maps each word to its length.",
		code: "def word_lengths(sentence):\n    return {word: len(word) for word in sentence.split()}\n\nprint(word_lengths('hello big world'))",
	},
	"longest_word": {
		plan: "max with key=len picks the longest word, the first one on ties.",
		code: "def longest_word(sentence):\n    return max(sentence.split(), key=len)\n\nprint(longest_word('hello big world'))",
	},
}

// fakeModelReply answers each kind of request a pipeline stage sends, told
// apart by the prompt texts in prompts/*.tmpl: the filter's rubric, the
// simulate judge and user-feedback requests, explain's preface request, and
// the writer (simulate's notebook writer or pack's answerer).
func fakeModelReply(c llmtest.Call) llmtest.Reply {
	msgs := c.Request.Messages
	system := ""
	if len(msgs) > 0 && msgs[0].Role == openai.ChatMessageRoleSystem {
		system = msgs[0].Content
	}
	last := c.LastUser()
	if r, ok := fakeAgentReply(msgs); ok {
		return r
	}
	switch {
	case strings.Contains(system, "You annotate programming conversations"):
		// The function defined last in the request is the reply being
		// explained (earlier turns come first as context); chosen by position,
		// not by map order, so the answer is the same on every run.
		fn, at := "the requested function", -1
		for name := range fakeSolutions {
			if i := strings.LastIndex(last, "def "+name+"("); i > at {
				fn, at = "`"+name+"`", i
			}
		}
		// It says what the code is for in the request's own words, as the
		// explain stage asks of a dialogue's first reply (no_purpose).
		purpose := ""
		if _, rest, ok := strings.Cut(last, "The user's latest request:\n\n"); ok {
			rest, _, _ = strings.Cut(rest, "\n")
			words := strings.FieldsFunc(rest, func(r rune) bool {
				return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != ','
			})
			if len(words) > 16 {
				words = words[:16]
			}
			if len(words) > 0 {
				purpose = " It answers the request to " + strings.ToLower(words[0][:1]) + strings.Join(words, " ")[1:] + "."
			}
		}
		return llmtest.Reply{Text: "This version defines " + fn + " with a short, direct approach and prints a small example so the run shows what it returns." + purpose + " It keeps to built-in operations, so it handles the empty case without special code."}
	case strings.Contains(last, "Score:"):
		return llmtest.Reply{Text: "Score: 5\nReason: it asks for a complete function with edge cases to handle."}
	case strings.Contains(last, "Does the code solve the task correctly"),
		strings.Contains(last, "You check whether a piece of code does what a task asked for"):
		return fakeJSON(map[string]any{"correct": true, "reason": "The code does what the task asks and the printed output confirms it."})
	case strings.Contains(last, "You play the user who asked a programming assistant"):
		// A follow-up request (simulate's followups): its kind is the one asked.
		kind := "extend"
		if _, rest, ok := strings.Cut(last, "Make the follow-up of this kind: "); ok {
			kind, _, _ = strings.Cut(rest, ",")
		}
		return fakeJSON(map[string]any{"kind": kind, "request": "Please also print a line saying the example ran."})
	case strings.Contains(last, "Reply to it for the user in two to four sentences of plain prose"):
		return llmtest.Reply{Text: "The output shows the function gives the expected result for the example. It applies the rule the task states directly to its argument, so the same steps handle other inputs too."}
	case strings.Contains(last, "You play a demanding user"):
		return fakeJSON(map[string]any{
			"met":      []string{"correctness"},
			"missed":   []string{"readability"},
			"feedback": "Please add a docstring that says what the function returns.",
		})
	}
	name := fakeTask(msgs)
	sol, ok := fakeSolutions[name]
	if !ok {
		return llmtest.Reply{Text: "I cannot tell which task this is."}
	}
	sawError := false
	for _, m := range msgs {
		sawError = sawError || strings.Contains(m.Content, "NameError")
	}
	if sol.buggy != "" && !sawError {
		return llmtest.Reply{Text: sol.plan + "\n\n```python\n" + sol.buggy + "\n```"}
	}
	if sawError && strings.Contains(last, "NameError") {
		return llmtest.Reply{Text: "The run failed with a NameError because `totl` is a typo for `total`; appending `total` fixes it.\n\n```python\n" + sol.code + "\n```"}
	}
	if strings.Contains(last, "print a line saying the example ran") { // the follow-up: the revision prints it
		return llmtest.Reply{Text: "I kept the function and added a line that says the example ran.\n\n```python\n" + sol.code + "\nprint('example ran')\n```"}
	}
	if strings.Contains(last, "add a docstring") { // the feedback round: the revision adds it
		doc := strings.Replace(sol.code, "):\n", "):\n    \"\"\"Return the result the task asks for.\"\"\"\n", 1)
		return llmtest.Reply{Text: "I added a docstring that says what the function returns.\n\n```python\n" + doc + "\n```"}
	}
	return llmtest.Reply{Text: sol.plan + "\n\n```python\n" + sol.code + "\n```"}
}

// fakeTask names the task a writer conversation is about: the known
// function name in the latest user message that mentions one (the one
// mentioned last, chosen by position, not map order, so that every run
// answers the same).
func fakeTask(msgs []openai.ChatCompletionMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != openai.ChatMessageRoleUser {
			continue
		}
		found, at := "", -1
		for name := range fakeSolutions {
			if j := strings.LastIndex(msgs[i].Content, name); j > at {
				found, at = name, j
			}
		}
		if found != "" {
			return found
		}
	}
	return ""
}

func fakeJSON(v any) llmtest.Reply {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fakeJSON: %v", err))
	}
	return llmtest.Reply{Text: string(b)}
}
