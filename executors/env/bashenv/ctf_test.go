package bashenv_test

import (
	"context"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/executors/env/envtest"
)

func TestCTF(t *testing.T) {
	tasks := envtest.Tasks(t, "testdata/ctf/ic_ctf.json")
	if len(tasks) != 4 || tasks[1].Setup[env.SetupCommand] == "" {
		t.Fatalf("loaded %+v", tasks)
	}
	cases := []struct {
		name    string
		task    int
		actions []string
		submit  string
		want    float64
	}{
		{"gold flag", 0, nil, "submit " + tasks[0].Gold, 1},
		{"flag case does not matter", 0, nil, "submit PICOCTF{R3V34L3D_0K}", 1},
		{"wrong flag", 0, nil, "submit picoCTF{nope}", 0},
		{"no flag", 0, nil, "submit", 0},
		{"solved with the task's files", 0, []string{"ls", "python3 reveal.py"}, "submit picoCTF{r3v34l3d_0k}", 1},
		{"setup command ran, base64 decoded", 1, []string{"cat .setup_ran", "base64 -d flag.b64"}, "submit picoCTF{b4s3_s1xty_f0ur}", 1},
		// Tasks that need the CTF tools (make ctf-image; .ci/setup on the host).
		{"metadata read with exiftool", 2, []string{"file photo.png", "exiftool -Comment -s3 photo.png | base64 -d"}, "submit picoCTF{ex1f_m3t4d4t4}", 1},
		{"hex dump reversed with xxd, unzipped", 3, []string{"xxd -r -p dump.hex > a.zip", "unzip -p a.zip flag.txt", "strings -n 8 a.zip | head -1"}, "submit picoCTF{h3x_t0_z1p}", 1},
	}
	envtest.EachCTF(t, func(t *testing.T, d envtest.Driver) {
		ctx := context.Background()
		e := envtest.Open(t, "ctf", d.Ex, env.Options{CacheDir: t.TempDir()})
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if _, err := e.Reset(ctx, tasks[c.task]); err != nil {
					t.Fatal(err)
				}
				for _, a := range c.actions {
					r, err := e.Step(ctx, a)
					if err != nil || !r.Valid {
						t.Fatalf("Step(%q) = %+v, %v", a, r, err)
					}
				}
				r, err := e.Step(ctx, c.submit)
				if err != nil || r.Reward != c.want || !r.Done {
					t.Errorf("%s: %+v, %v; want reward %v", c.submit, r, err, c.want)
				}
			})
		}
		// The working directory holds the task's files, not its solution;
		// a new episode gets them back whatever the last one did.
		if _, err := e.Reset(ctx, tasks[0]); err != nil {
			t.Fatal(err)
		}
		if r, err := e.Step(ctx, "pwd; ls -A; rm reveal.py"); err != nil || r.Observation != "/ctf/0\nreveal.py\n" {
			t.Errorf("first look: %q, %v", r.Observation, err)
		}
		if _, err := e.Reset(ctx, tasks[0]); err != nil {
			t.Fatal(err)
		}
		if r, err := e.Step(ctx, "python3 reveal.py"); err != nil || !strings.Contains(r.Observation, tasks[0].Gold) {
			t.Errorf("after Reset: %q, %v", r.Observation, err)
		}
	})
}
