package pyenv_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/executors/env/envtest"
)

// Replaying a trajectory in InterCode's format: each def is scored as
// submit <name>, other cells score 0, the policy's retry turns are not run;
// trajectory 1 logged a success our judge does not grant (uniq returning its
// input passes one test of three), so success agrees on one of two.
func TestReplay(t *testing.T) {
	trs, err := env.ReadTrajectories("testdata/ic_python_trajectories.json")
	if err != nil || len(trs) != 2 || trs[1].TaskID != 1 {
		t.Fatalf("ReadTrajectories: %d, %v", len(trs), err)
	}
	tasks := loadFixture(t)
	d := envtest.Drivers(t)[0]
	ctx := context.Background()
	e := envtest.Open(t, "python", d.Ex, env.Options{})
	wantOurs := [][]float64{{1.0 / 3, 0, 0, 1}, {1.0 / 3}}
	wantAgree := [][]bool{{true, true, true, true}, {false}}
	var ours []env.Trajectory
	for i, tr := range trs {
		if _, err := e.Reset(ctx, tasks[tr.TaskID]); err != nil {
			t.Fatal(err)
		}
		res, err := env.Replay(ctx, e, env.EnvName(tr.Environment), tr)
		if err != nil {
			t.Fatal(err)
		}
		for j, s := range res.Steps {
			if diff := s.Ours - wantOurs[i][j]; diff > 1e-9 || diff < -1e-9 || s.Agree != wantAgree[i][j] {
				t.Errorf("trajectory %d step %d: ours %v agree %v, want %v %v", i, j, s.Ours, s.Agree, wantOurs[i][j], wantAgree[i][j])
			}
		}
		if res.LoggedSuccess != true || res.OurSuccess != (i == 0) {
			t.Errorf("trajectory %d: success logged %v ours %v", i, res.LoggedSuccess, res.OurSuccess)
		}
		ours = append(ours, res.Ours)
	}
	// Our trajectories round-trip through InterCode's format.
	p := filepath.Join(t.TempDir(), "ours.json")
	if err := env.WriteTrajectories(p, ours); err != nil {
		t.Fatal(err)
	}
	back, err := env.ReadTrajectories(p)
	if err != nil || len(back) != 2 || back[0].Summary.MaxReward != 1 || back[0].Summary.TurnsTaken != 4 || back[1].Success() {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}
