package executors

import "testing"

func TestScrubScratch(t *testing.T) {
	res := Result{
		Stdout: "cwd /tmp/cf/run-1wly41a1/\n",
		Stderr: "/tmp/cf/run-1wly41a1/main.js:2\n    at f (/tmp/cf/run-1wly41a1/main.js:2:12)\nParse error: x in /tmp/cf/run-q_9z/main.php on line 5\n/tmp/cf/other/file\n",
	}
	scrubScratch(&res)
	if res.Stdout != "cwd \n" {
		t.Errorf("stdout %q", res.Stdout)
	}
	if want := "main.js:2\n    at f (main.js:2:12)\nParse error: x in main.php on line 5\n/tmp/cf/other/file\n"; res.Stderr != want {
		t.Errorf("stderr %q, want %q", res.Stderr, want)
	}
}
