package docker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	_ "github.com/codefeedback/codefeedback/executors/bwrap"
)

// langBench is a hello world per language and the shell line a `docker
// run` per snippet would use to compile and run it (the baseline).
var langBench = []struct {
	lang       executors.Language
	code, file string
	script     string // run in /tmp with the source in $F
}{
	{executors.JavaScript, "console.log(2)\n", "main.js", "node main.js"},
	{executors.TypeScript, "const x: number = 2;\nconsole.log(x)\n", "main.ts", "tsc --outDir . main.ts && node main.js"},
	{executors.C, "#include <stdio.h>\nint main(void) { printf(\"2\\n\"); return 0; }\n", "main.c", "gcc -O1 -o main main.c && ./main"},
	{executors.CPP, "#include <iostream>\nint main() { std::cout << 2 << \"\\n\"; }\n", "main.cpp", "g++ -O1 -o main main.cpp && ./main"},
	{executors.Go, "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(2) }\n", "main.go", "GOCACHE=/tmp/gc GO111MODULE=off go build -o main main.go && ./main"},
	{executors.Java, "public class Main { public static void main(String[] a) { System.out.println(2); } }\n", "Main.java", "javac -d c Main.java && java -cp c Main"},
	{executors.Rust, "fn main() { println!(\"2\"); }\n", "main.rs", "rustc -o main main.rs && ./main"},
	{executors.Ruby, "puts 2\n", "main.rb", "ruby main.rb"},
	{executors.PHP, "<?php echo 2, \"\\n\";\n", "main.php", "php -n main.php"},
	{executors.Lua, "print(2)\n", "main.lua", "lua5.4 main.lua"},
}

// naiveLangRun is the baseline: one `docker run --rm` per snippet (through
// the API, with the sandbox's isolation) that writes, compiles and runs it.
func naiveLangRun(ctx context.Context, l *Launcher, file, code, script string) error {
	sh := fmt.Sprintf("cd /tmp && printf '%%s' \"$CF_CODE\" > %s && %s", file, script)
	cfg, hc := l.containerConfig(0, []string{"sh", "-c", sh}, l.cfg.Init)
	cfg.Env = append(cfg.Env, "CF_CODE="+code, "HOME=/tmp")
	return dockerRun(ctx, l, cfg, hc, "2\n")
}

// BenchmarkLanguages: runs/s per language of a `docker run` per snippet
// (naive_run, the baseline), then the docker and bwrap pools with a
// compile-cache miss on every run (each run's source differs) and with
// hits; x_naive is the ratio to the baseline, x_miss (on hits) the ratio
// of a hit to a miss on the same driver. The image must hold the
// toolchains (make sandbox-image). Run it as:
//
//	go test -run '^$' -bench Languages -benchtime 4x ./executors/docker
func BenchmarkLanguages(b *testing.B) {
	var seq atomic.Int64
	l := newTestLauncher(b)
	dockerEx := executors.NewPool(l, executors.PoolOptions{Size: benchConcurrency})
	defer dockerEx.Close()
	bwrapEx, err := executors.Open(context.Background(), fmt.Sprintf("bwrap://?pool=%d", benchConcurrency))
	if err != nil {
		b.Fatal(err)
	}
	defer bwrapEx.Close()
	for _, lb := range langBench {
		name := string(lb.lang)
		missNs := map[string]float64{} // ns per run of a compile-cache miss, per driver
		b.Run(name+"/naive_run", func(b *testing.B) {
			parallelRuns(b, name, true, func(ctx context.Context) error {
				return naiveLangRun(ctx, l, lb.file, lb.code, lb.script)
			})
		})
		for _, d := range []struct {
			name string
			ex   executors.Executor
		}{{"docker", dockerEx}, {"bwrap", bwrapEx}} {
			run := func(ctx context.Context, code string) error {
				r, err := d.ex.Run(ctx, executors.Request{Language: lb.lang, Code: code})
				if err != nil {
					return err
				}
				if r.Stdout != "2\n" || !r.OK() {
					return fmt.Errorf("%s %s: got stdout %q exit %d stderr %q", d.name, lb.lang, r.Stdout, r.ExitCode, r.Stderr)
				}
				return nil
			}
			if lb.lang.Compiled() {
				// A miss every time: each run's source differs by a comment.
				b.Run(name+"/"+d.name+"_miss", func(b *testing.B) {
					parallelRuns(b, name, false, func(ctx context.Context) error {
						return run(ctx, fmt.Sprintf("%s// run %d\n", lb.code, seq.Add(1)))
					})
					missNs[d.name] = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				})
			}
			b.Run(name+"/"+d.name+"_hit", func(b *testing.B) {
				for range 2 * benchConcurrency {
					if err := run(context.Background(), lb.code); err != nil {
						b.Fatal(err)
					}
				}
				parallelRuns(b, name, false, func(ctx context.Context) error { return run(ctx, lb.code) })
				if miss := missNs[d.name]; miss > 0 {
					b.ReportMetric(miss/(float64(b.Elapsed().Nanoseconds())/float64(b.N)), "x_miss")
				}
			})
		}
	}
}
