package prompts

import "testing"

// Every embedded template parses, and Versions names each with its hash.
func TestEveryTemplateParses(t *testing.T) {
	for _, n := range templateNames(t) {
		tp, err := Get(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if len(tp.Version) != 12 {
			t.Errorf("%s: version %q", n, tp.Version)
		}
	}
}

func TestVersions(t *testing.T) {
	a, _ := Get("correct_fix")
	b, _ := Get("correct_inject")
	for _, tc := range []struct {
		names   []string
		want    string
		wantErr bool
	}{
		{names: nil, want: ""},
		{names: []string{"correct_fix"}, want: "correct_fix@" + a.Version},
		{names: []string{"correct_fix", "correct_inject"}, want: "correct_fix@" + a.Version + ",correct_inject@" + b.Version},
		{names: []string{"correct_fix", "no_such_prompt"}, wantErr: true},
	} {
		got, err := Versions(tc.names...)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("Versions(%v) = %q, %v; want %q (error %v)", tc.names, got, err, tc.want, tc.wantErr)
		}
	}
}
