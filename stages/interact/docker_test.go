package interact_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/codefeedback/codefeedback/executors/docker"
	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/internal/agent"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
)

// TestDockerBashImage: on docker, the stage runs bash tasks on InterCode's
// userland (env.BashImage, no compiler), not the pipeline's sandbox image
// (which has one), as `intercode replay` and `intercode run` do.
func TestDockerBashImage(t *testing.T) {
	if os.Getenv("CODEFEEDBACK_SANDBOX_IMAGE") == "" {
		t.Skip("skipping: docker not configured (CODEFEEDBACK_SANDBOX_IMAGE unset)")
	}
	if err := exec.Command("docker", "image", "inspect", env.BashImage).Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s missing: .ci/setup builds it (make nl2bash-image)", env.BashImage)
		}
		t.Skipf("skipping: %s missing (make nl2bash-image)", env.BashImage)
	}
	ts, err := agent.LoadTasks(filepath.Join("..", "..", "data", "intercode", "bash_tasks.jsonl"), "")
	if err != nil {
		t.Fatal(err)
	}
	tk := ts[0]
	tk.ID, tk.Query = "compiler", "Say whether a C compiler is installed."
	tk.Gold = "command -v cc >/dev/null && echo yes || echo no"
	dir := t.TempDir()
	line, err := json.Marshal(tk)
	if err != nil {
		t.Fatal(err)
	}
	tasks := filepath.Join(dir, "tasks.jsonl")
	if err := os.WriteFile(tasks, append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply { return llmtest.Reply{Text: fence("bash", tk.Gold)} })
	out := filepath.Join(dir, "d.jsonl")
	y := "run_dir: " + filepath.Join(dir, "run") + "\nexecutor: docker://?pool=1\n" +
		"model: {base_url: \"" + srv.URL + "\", model: fake-agent, max_attempts: 1}\n" +
		"inputs: [{path: " + tasks + ", format: intercode}]\n" +
		"stages:\n  - {stage: interact, settings: {strategy: tryagain, turns: 1}}\n" +
		"outputs: [{path: " + out + ", format: jsonl, kind: dialogue}]\n"
	pipelinetest.Run(t, dir, y, pipeline.RunOptions{})
	ds := pipelinetest.Dialogues(t, out)
	if len(ds) != 1 {
		t.Fatalf("%d dialogues, want 1", len(ds))
	}
	if got := strings.TrimSpace(ds[0].Messages[2].Exec.Stdout); got != "no" {
		t.Errorf("the task saw a C compiler (%q): it ran on the sandbox image, not %s", got, env.BashImage)
	}
}
