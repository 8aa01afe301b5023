package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
)

// examples are shown at the end of every command's --help, keyed by the
// command's path ("" is the program itself). Each is a line a user can
// type; TestHelpExamples checks that every command has one and that every
// flag an example uses is one of its command's flags.
var examples = map[string][]string{
	"": {
		"codefeedback run data/pipeline.yaml               # the sample pipeline, no model needed",
		"codefeedback validate my.yaml && codefeedback run my.yaml --dry-run",
	},
	"audit": {
		"codefeedback audit out/dialogues.jsonl --against humaneval,mbpp",
		"codefeedback audit data.parquet --decontaminate clean.parquet --fail-on-leak --json",
	},
	"bench":       {"codefeedback bench fetch && codefeedback bench list"},
	"bench fetch": {"codefeedback bench fetch humaneval mbpp", "codefeedback bench fetch --bench-dir /data/benchmarks"},
	"bench list":  {"codefeedback bench list --json"},
	"cache":       {"codefeedback cache stats --run-dir runs/sample"},
	"cache stats": {"codefeedback cache stats --run-dir runs/sample --json"},
	"cache output": {
		"codefeedback cache output --run-dir runs/sample correct --kind dialogue > correct.jsonl",
	},
	"cache gc": {"codefeedback cache gc --run-dir runs/sample"},
	"eval": {
		"codefeedback eval --model qwen2.5-coder-7b --base-url http://127.0.0.1:8000/v1 --benchmarks humaneval --rounds 2",
		"codefeedback eval --model gpt-4o-mini --benchmarks mbpp --limit 20 --json",
	},
	"exec": {
		"codefeedback exec prog.py",
		"echo 'SELECT 1;' | codefeedback exec --lang sql -",
		"codefeedback exec --lang list",
	},
	"export": {
		"codefeedback export out/dialogues.jsonl train.parquet",
		"codefeedback export --to sharegpt out/dialogues.jsonl sharegpt.json",
		"codefeedback export --to dpo out/dialogues.jsonl pairs.jsonl",
		"codefeedback export --to rl out/dialogues.jsonl rl.parquet",
	},
	"serve": {
		"codefeedback serve --concurrency 4                  # 127.0.0.1:8080",
		"CODEFEEDBACK_SERVE_API_KEY=... codefeedback serve --listen 0.0.0.0:8080",
	},
	"import": {
		"codefeedback import mbpp.jsonl problems.jsonl",
		"codefeedback import --format csv --map id=task,text=question pool.csv queries.jsonl",
	},
	"inspect":   {"codefeedback inspect out/code_feedback.parquet --sample 1", "codefeedback inspect problems.jsonl --json"},
	"intercode": {"codefeedback intercode fetch && codefeedback intercode replay trajectories.json"},
	"intercode fetch": {
		"codefeedback intercode fetch",
		"codefeedback intercode fetch --only data/sql/spider/ --dir /data/intercode",
	},
	"intercode replay":      {"codefeedback intercode replay --limit 20 ic_bash_trajectories.json"},
	"intercode check-golds": {"codefeedback intercode check-golds --env-param backend=mariadb --keep golds-ok.jsonl ic_spider_dev.json"},
	"intercode step":        {"codefeedback intercode step --task 3 data/intercode/bash_tasks.jsonl 'ls -la' 'wc -l *.txt'"},
	"intercode run": {
		"codefeedback intercode run --dataset data/intercode/bash_tasks.jsonl --model qwen2.5-coder-7b --base-url http://127.0.0.1:8000/v1",
	},
	"merge": {
		"codefeedback merge --into runs/all runs/shard-0 runs/shard-1",
		"codefeedback merge data/pipeline.yaml --phase 0 --run-root /shared/runs/big",
	},
	"plan": {
		"codefeedback plan data/pipeline.yaml --shards 8",
		"codefeedback plan data/pipeline.yaml --shards 8 --run-root /shared/runs/big --slurm > submit.sh && bash submit.sh",
		"codefeedback plan my.yaml --shards 8 --kubernetes --image registry.example/codefeedback:1 > jobs.yaml",
	},
	"models": {"codefeedback models check --base-url http://127.0.0.1:8000/v1"},
	"models check": {
		"codefeedback models check --base-url http://127.0.0.1:8000/v1 --model qwen2.5-coder-7b",
		"OPENAI_API_KEY=sk-... codefeedback models check --json",
	},
	"push":   {"HF_TOKEN=hf_... HF_ENDPOINT=https://huggingface.co codefeedback push me/my-dialogues out"},
	"report": {"codefeedback report --license apache-2.0 runs/sample"},
	"run": {
		"codefeedback run data/pipeline.yaml",
		"codefeedback run my.yaml --dry-run",
		"codefeedback run my.yaml --only correct --limit 10 --max-cost 5",
		"codefeedback run data/pipeline.yaml --phase 1 --shard 3/8 --run-root /shared/runs/big",
	},
	"validate": {"codefeedback validate my.yaml", "codefeedback validate --json my.yaml"},
	"verify":   {"codefeedback verify out/dialogues.jsonl", "codefeedback verify --no-rerun out/code_feedback.parquet"},
}

// The help printer appends the examples to urfave/cli's help of a command
// or of the program; help.go's init wraps whatever printer is set.
func init() {
	base := cli.HelpPrinter
	cli.HelpPrinter = func(w io.Writer, templ string, data any) {
		base(w, templ, data)
		var path string
		switch d := data.(type) {
		case *cli.Command:
			var ok bool
			if path, ok = findPath(commands, d, ""); !ok {
				return
			}
		case *cli.App:
			path = ""
		default:
			return
		}
		writeExamples(w, examples[path])
	}
}

// findPath is the path of command c in the tree ("cache stats"); HelpName
// would do, but urfave/cli prefixes it anew on every run of an app.
func findPath(cmds []*cli.Command, c *cli.Command, prefix string) (string, bool) {
	for _, x := range cmds {
		p := strings.TrimSpace(prefix + " " + x.Name)
		if x == c {
			return p, true
		}
		if p, ok := findPath(x.Subcommands, c, p); ok {
			return p, true
		}
	}
	return "", false
}

func writeExamples(w io.Writer, ex []string) {
	if len(ex) == 0 {
		return
	}
	fmt.Fprintln(w, "\nEXAMPLES:")
	for _, e := range ex {
		fmt.Fprintln(w, "   "+e)
	}
}
