package main

import (
	"reflect"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestPermuteArgs(t *testing.T) {
	cmds := []*cli.Command{
		{Name: "inspect", Flags: []cli.Flag{&cli.IntFlag{Name: "sample"}, &cli.BoolFlag{Name: "json"}}},
		{Name: "cache", Subcommands: []*cli.Command{{Name: "stats", Flags: []cli.Flag{&cli.StringFlag{Name: "run-dir"}}}}},
	}
	for _, tc := range []struct{ in, want []string }{
		{[]string{"cf", "inspect", "F", "--sample", "3"}, []string{"cf", "inspect", "--sample", "3", "F"}},
		{[]string{"cf", "inspect", "F", "--json", "G"}, []string{"cf", "inspect", "--json", "F", "G"}},
		{[]string{"cf", "inspect", "F", "--sample=3"}, []string{"cf", "inspect", "--sample=3", "F"}},
		{[]string{"cf", "inspect", "--", "-F", "--json"}, []string{"cf", "inspect", "--", "-F", "--json"}},
		{[]string{"cf", "cache", "stats", "x", "--run-dir", "r"}, []string{"cf", "cache", "stats", "--run-dir", "r", "x"}},
		{[]string{"cf", "unknown", "a", "--b"}, []string{"cf", "unknown", "a", "--b"}},
		{[]string{"cf", "inspect", "-"}, []string{"cf", "inspect", "-"}},
	} {
		if got := permuteArgs(cmds, tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("permuteArgs(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}
