// Package loaders checks export files by the rules of what loads them:
// OpenAI's published fine-tuning format checks, LLaMA-Factory's sharegpt
// converter, and the Code-Feedback layout trainers' chat templates accept.
// Each check returns the problems of one record (none when it loads).
package loaders

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// OpenAITokenLimit is the per-example token limit OpenAI's fine-tuning
// checks against (gpt-4o-mini and gpt-4o: 65,536; older models 16,385).
const OpenAITokenLimit = 65536

// OpenAITokenBound is an upper bound on an example's tokens under any
// byte-level BPE (cl100k, o200k): every token decodes to at least one
// byte, so tokens <= bytes; the cookbook adds 3 per message and 3 for the
// reply's priming, and a name or tool costs its bytes.
func OpenAITokenBound(line []byte) int {
	var ex struct {
		Messages []map[string]json.RawMessage `json:"messages"`
		Tools    json.RawMessage              `json:"tools"`
	}
	if json.Unmarshal(line, &ex) != nil {
		return len(line)
	}
	n := 3 + len(ex.Tools)
	for _, m := range ex.Messages {
		n += 3
		for k, v := range m {
			if k == "weight" {
				continue
			}
			var s string
			if json.Unmarshal(v, &s) == nil {
				n += len(s)
			} else {
				n += len(v)
			}
		}
	}
	return n
}

// allowedKeys are the keys OpenAI accepts per role in a fine-tuning
// message.
var allowedKeys = map[string]map[string]bool{
	"system":    {"role": true, "content": true, "name": true},
	"user":      {"role": true, "content": true, "name": true},
	"assistant": {"role": true, "content": true, "name": true, "weight": true, "tool_calls": true, "function_call": true},
	"tool":      {"role": true, "content": true, "tool_call_id": true},
}

// OpenAI checks one line of a chat fine-tuning file the way OpenAI's format
// checks do (the cookbook's data preparation script, extended by the tool
// calling rules): a messages list; known roles with only their keys;
// content a non-empty string (an assistant turn with tool calls may have
// none); weight 0 or 1 on assistant turns only; every tool turn answering
// an earlier call by id; tools defined when calls are made; at least one
// assistant turn; the example within OpenAITokenLimit.
func OpenAI(line []byte) []string {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	var ex map[string]json.RawMessage
	if err := json.Unmarshal(line, &ex); err != nil {
		return []string{"data_type: not a JSON object: " + err.Error()}
	}
	for k := range ex {
		if k != "messages" && k != "tools" && k != "parallel_tool_calls" {
			bad("unrecognized top-level key %q", k)
		}
	}
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(ex["messages"], &msgs); err != nil || len(msgs) == 0 {
		return append(errs, "missing_messages_list")
	}
	tools := map[string]bool{}
	if raw, ok := ex["tools"]; ok {
		var ts []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &ts); err != nil {
			bad("tools: %v", err)
		}
		for _, t := range ts {
			var schema map[string]any
			if t.Type != "function" || t.Function.Name == "" || json.Unmarshal(t.Function.Parameters, &schema) != nil || schema["type"] != "object" {
				bad("tools: a definition without type function, a name and an object schema")
			}
			tools[t.Function.Name] = true
		}
	}
	calls := map[string]bool{}
	assistant := false
	for i, m := range msgs {
		var role string
		if json.Unmarshal(m["role"], &role) != nil {
			bad("message %d: message_missing_key role", i)
			continue
		}
		keys, ok := allowedKeys[role]
		if !ok {
			bad("message %d: unrecognized_role %q", i, role)
			continue
		}
		for k := range m {
			if !keys[k] {
				bad("message %d: message_unrecognized_key %q for role %s", i, k, role)
			}
		}
		if _, ok := m["content"]; !ok {
			bad("message %d: message_missing_key content", i)
		}
		var content *string
		if err := json.Unmarshal(m["content"], &content); err != nil {
			bad("message %d: content is not a string", i)
		}
		var tcs []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		}
		if raw, ok := m["tool_calls"]; ok {
			if err := json.Unmarshal(raw, &tcs); err != nil || len(tcs) == 0 {
				bad("message %d: tool_calls is not a non-empty list", i)
			}
		}
		if (content == nil || *content == "") && len(tcs) == 0 {
			bad("message %d: missing_content", i)
		}
		for _, tc := range tcs {
			var args map[string]any
			switch {
			case tc.ID == "" || tc.Type != "function":
				bad("message %d: tool call without an id or of type %q", i, tc.Type)
			case !tools[tc.Function.Name]:
				bad("message %d: tool call of %q, which the example's tools do not define", i, tc.Function.Name)
			case json.Unmarshal([]byte(tc.Function.Arguments), &args) != nil:
				bad("message %d: tool call arguments are not a JSON object", i)
			}
			calls[tc.ID] = true
		}
		if raw, ok := m["weight"]; ok {
			var w int
			if json.Unmarshal(raw, &w) != nil || (w != 0 && w != 1) {
				bad("message %d: weight %s, want 0 or 1", i, raw)
			}
		}
		switch role {
		case "assistant":
			assistant = true
		case "tool":
			var id string
			json.Unmarshal(m["tool_call_id"], &id)
			if !calls[id] {
				bad("message %d: tool answer %q to no earlier call", i, id)
			}
		}
	}
	if !assistant {
		bad("example_missing_assistant_message")
	}
	if n := OpenAITokenBound(line); n > OpenAITokenLimit {
		bad("example may exceed %d tokens (bound %d)", OpenAITokenLimit, n)
	}
	return errs
}

// ShareGPTInfo is the part of a dataset_info.json entry the checks use.
type ShareGPTInfo struct {
	FileName   string            `json:"file_name"`
	Formatting string            `json:"formatting"`
	Columns    map[string]string `json:"columns"`
	Tags       map[string]string `json:"tags"`
}

// ShareGPTBeside reads the dataset_info.json beside a ShareGPT file, as
// LLaMA-Factory does, and returns the name and entry of the dataset whose
// file_name is the file's.
func ShareGPTBeside(path string) (name string, info ShareGPTInfo, err error) {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(path), "dataset_info.json"))
	if err != nil {
		return "", info, fmt.Errorf("no dataset_info.json beside the ShareGPT file: %w", err)
	}
	var all map[string]ShareGPTInfo
	if err := json.Unmarshal(b, &all); err != nil {
		return "", info, fmt.Errorf("dataset_info.json: %w", err)
	}
	for name, info := range all {
		if info.FileName == filepath.Base(path) {
			return name, info, nil
		}
	}
	return "", info, fmt.Errorf("dataset_info.json has no entry for %s: %s", filepath.Base(path), b)
}

// tag returns a tag of info with LLaMA-Factory's default.
func (info ShareGPTInfo) tag(name, def string) string {
	if v := info.Tags[name]; v != "" {
		return v
	}
	return def
}

// ShareGPT checks one record the way LLaMA-Factory's sharegpt converter
// does: the messages column is a list; a leading system-tag turn is the
// system prompt (or the system column is a string); then human or
// observation turns at odd positions and gpt or function_call turns at even
// positions (1-based), an even number of turns, so every sample ends on the
// assistant's side. The converter drops a record that breaks these rules.
func ShareGPT(line []byte, info ShareGPTInfo) []string {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	if info.Formatting != "sharegpt" {
		bad("dataset_info formatting %q, want sharegpt", info.Formatting)
	}
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(line, &rec); err != nil {
		return []string{"not a JSON object: " + err.Error()}
	}
	col := info.Columns["messages"]
	if col == "" {
		col = "conversations"
	}
	roleTag, contentTag := info.tag("role_tag", "from"), info.tag("content_tag", "value")
	user, assistant := info.tag("user_tag", "human"), info.tag("assistant_tag", "gpt")
	observation, function := info.tag("observation_tag", "observation"), info.tag("function_tag", "function_call")
	system := info.tag("system_tag", "system")
	var turns []map[string]any
	if err := json.Unmarshal(rec[col], &turns); err != nil || len(turns) == 0 {
		return append(errs, fmt.Sprintf("column %q is not a non-empty list of turns", col))
	}
	if sc := info.Columns["system"]; sc != "" {
		if raw, ok := rec[sc]; ok {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				bad("system column %q is not a string", sc)
			}
		}
	}
	if r, _ := turns[0][roleTag].(string); r == system && info.Columns["system"] == "" {
		turns = turns[1:]
	}
	odd := map[string]bool{user: true, observation: true}
	even := map[string]bool{assistant: true, function: true}
	for i, t := range turns {
		r, _ := t[roleTag].(string)
		if _, ok := t[contentTag].(string); !ok {
			bad("turn %d: %q is not a string", i, contentTag)
		}
		if i%2 == 0 && !odd[r] {
			bad("turn %d: %q where LLaMA-Factory wants %s or %s", i, r, user, observation)
		}
		if i%2 == 1 && !even[r] {
			bad("turn %d: %q where LLaMA-Factory wants %s or %s", i, r, assistant, function)
		}
	}
	if len(turns)%2 != 0 {
		bad("odd number of turns (%d): the last is not the assistant's", len(turns))
	}
	return errs
}

// CodeFeedback checks one record of the Code-Feedback layout as a chat
// template that accepts only user and assistant turns needs it: an id (a
// string or an integer), messages of role user or assistant only, with
// string content, starting with the user and alternating, ending with the
// assistant.
func CodeFeedback(line []byte) []string {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	var rec struct {
		ID       json.RawMessage `json:"id"`
		Messages []struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(line, &rec); err != nil {
		return []string{"not a Code-Feedback record: " + err.Error()}
	}
	if id := strings.TrimSpace(string(rec.ID)); id == "" || id == "null" || (id[0] != '"' && strings.ContainsAny(id, ".eE{[")) {
		bad("id %s is neither a string nor an integer", rec.ID)
	}
	if len(rec.Messages) == 0 {
		bad("no messages")
	}
	for i, m := range rec.Messages {
		if m.Role == nil || m.Content == nil {
			bad("message %d: missing role or content", i)
			continue
		}
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if *m.Role != want {
			bad("message %d: role %q, want %s (alternating user/assistant)", i, *m.Role, want)
		}
	}
	if n := len(rec.Messages); n > 0 && rec.Messages[n-1].Role != nil && *rec.Messages[n-1].Role != "assistant" {
		bad("the last message is not the assistant's")
	}
	return errs
}
