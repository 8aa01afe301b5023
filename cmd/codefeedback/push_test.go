package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/hub"
	"github.com/codefeedback/codefeedback/internal/hub/hubtest"
	"github.com/codefeedback/codefeedback/schema"
)

// TestPushRoundTrip: push publishes the card and the files its configs
// name to a fake Hub on loopback (the Parquet file through LFS) in the
// Hub's layout: the Parquet config is the default (the local card had the
// JSONL one) and its file is under data/, the other config's under its
// name; the pushed card names those paths and loads the repository by
// name; every data file reads back byte for byte; the token comes from
// HF_TOKEN.
func TestPushRoundTrip(t *testing.T) {
	srv := hubtest.New("hf_secret")
	defer srv.Close()
	dir := t.TempDir()
	msgs := []schema.Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "a"}}
	d := schema.Dialogue{ID: schema.DialogueID(msgs), Messages: msgs}
	if err := schema.WriteAll(filepath.Join(dir, "in.jsonl"), []schema.Dialogue{d}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, out := range []string{"code_feedback.jsonl", "code_feedback.parquet"} {
		if _, err := schema.Export(ctx, filepath.Join(dir, "in.jsonl"), filepath.Join(dir, out), schema.ExportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	card := "---\nlicense: mit\nconfigs:\n  - config_name: code_feedback_jsonl\n    data_files:\n      - split: train\n        path: code_feedback.jsonl\n" +
		"    default: true\n  - config_name: code_feedback_parquet\n    data_files:\n      - split: train\n        path: code_feedback.parquet\n---\n\n# d\n\n" +
		"```python\nds = load_dataset(\"json\", data_files=\"code_feedback.jsonl\", split=\"train\")\n```\n"
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(card), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_TOKEN", "hf_secret")
	var stderr bytes.Buffer
	if err := runPush(ctx, pushOptions{Repo: "me/dialogues", Dir: dir, Private: true, Endpoint: srv.URL, Message: "Upload"}, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "pushed 3 files to me/dialogues") {
		t.Errorf("stderr %q", stderr.String())
	}
	c := &hub.Client{Endpoint: srv.URL, Token: "hf_secret"}
	for local, inRepo := range map[string]string{
		"code_feedback.parquet": "data/train-00000-of-00001.parquet",
		"code_feedback.jsonl":   "code_feedback_jsonl/train-00000-of-00001.jsonl",
	} {
		got, err := c.Download(ctx, "me/dialogues", inRepo)
		if err != nil {
			t.Fatalf("%s: %v", inRepo, err)
		}
		want, _ := os.ReadFile(filepath.Join(dir, local))
		if !bytes.Equal(got, want) {
			t.Errorf("%s: read back %d bytes, want %d (%s)", inRepo, len(got), len(want), local)
		}
	}
	if r := srv.Repo("me/dialogues"); r != nil && len(r.Files) != 3 {
		t.Errorf("repository files %v, want the card and 2 data files", keysOf(r.Files))
	}
	pushed, err := c.Download(ctx, "me/dialogues", "README.md")
	if err != nil {
		t.Fatal(err)
	}
	wantCard := "---\nlicense: mit\nconfigs:\n  - config_name: code_feedback_jsonl\n    data_files:\n      - split: train\n        path: code_feedback_jsonl/train-00000-of-00001.jsonl\n" +
		"  - config_name: code_feedback_parquet\n    data_files:\n      - split: train\n        path: data/train-00000-of-00001.parquet\n    default: true\n---\n\n# d\n\n" +
		"```python\nds = load_dataset(\"me/dialogues\", split=\"train\")\n```\n"
	if string(pushed) != wantCard {
		t.Errorf("pushed card:\n%s\nwant:\n%s", pushed, wantCard)
	}
	if local, _ := os.ReadFile(filepath.Join(dir, "README.md")); string(local) != card {
		t.Errorf("the local card changed:\n%s", local)
	}
	if r := srv.Repo("me/dialogues"); r == nil || !r.Private {
		t.Errorf("repository %+v, want private", r)
	}
	if !strings.Contains(strings.Join(srv.Calls, "\n"), "/lfs-upload/") {
		t.Errorf("the Parquet file did not go through LFS: %v", srv.Calls)
	}
	t.Setenv("HF_TOKEN", "")
	if err := runPush(ctx, pushOptions{Repo: "me/dialogues", Dir: dir, Endpoint: srv.URL}, &stderr); err == nil || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("push without a token: %v, want an error naming HF_TOKEN", err)
	}
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
