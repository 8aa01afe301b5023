package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/codefeedback/codefeedback/internal/hub"
)

type pushOptions struct {
	Repo     string
	Dir      string
	Private  bool
	Token    string
	Endpoint string
	Message  string
}

func init() {
	var o pushOptions
	register(&cli.Command{
		Name:      "push",
		Usage:     "publish a dataset directory (dataset card and the data files it lists) to the Hugging Face Hub",
		ArgsUsage: "REPO [DIR]",
		Description: "REPO is namespace/name. DIR (default out) holds the README.md dataset card a run writes beside its " +
			"outputs; the card's configs name the data files (Parquet, JSONL) to publish, under the same names, so the " +
			"card's configs load on the Hub. The repository is created when missing (private with --private); files go " +
			"in one commit, large and Parquet files through LFS, as the huggingface_hub client does. The token comes " +
			"from --token or HF_TOKEN, the Hub's URL from --endpoint or HF_ENDPOINT.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "private", Usage: "create the repository private", Destination: &o.Private},
			&cli.StringFlag{Name: "token", Usage: "Hub token (default $HF_TOKEN)", Destination: &o.Token},
			&cli.StringFlag{Name: "endpoint", Usage: "the Hub's base URL (default $HF_ENDPOINT)", Destination: &o.Endpoint},
			&cli.StringFlag{Name: "message", Value: "Upload dataset with codefeedback", Usage: "commit message", Destination: &o.Message},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 || c.NArg() > 2 {
				return withCode(2, errors.New("push: want REPO [DIR]"))
			}
			o.Repo, o.Dir = c.Args().Get(0), c.Args().Get(1)
			return runPush(c.Context, o, errWriter(c.App.ErrWriter))
		},
	})
}

func runPush(ctx context.Context, o pushOptions, stderr io.Writer) error {
	if o.Dir == "" {
		o.Dir = "out"
	}
	if o.Token == "" {
		o.Token = os.Getenv("HF_TOKEN")
	}
	if o.Endpoint == "" {
		o.Endpoint = os.Getenv("HF_ENDPOINT")
	}
	switch {
	case o.Token == "":
		return withCode(2, errors.New("push: no token: set HF_TOKEN or pass --token"))
	case o.Endpoint == "":
		return withCode(2, errors.New("push: no Hub URL: set HF_ENDPOINT or pass --endpoint"))
	}
	files, err := cardFiles(o.Dir)
	if err != nil {
		return withCode(exitBadData, fmt.Errorf("push: %w", err)) // DIR, its card or a file it names cannot be read
	}
	c := &hub.Client{Endpoint: o.Endpoint, Token: o.Token}
	if err := c.CreateRepo(ctx, o.Repo, o.Private); err != nil {
		return fmt.Errorf("push: %w", err)
	}
	url, err := c.Upload(ctx, o.Repo, files, o.Message)
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	fmt.Fprintf(stderr, "pushed %d files to %s: %s\n", len(files), o.Repo, url)
	return nil
}

// cardFiles lists README.md of dir and the data files its configs name.
func cardFiles(dir string) ([]hub.File, error) {
	card := filepath.Join(dir, "README.md")
	b, err := os.ReadFile(card)
	if err != nil {
		return nil, fmt.Errorf("%w (run `codefeedback report` to write the card)", err)
	}
	rest, ok := strings.CutPrefix(string(b), "---\n")
	head, _, ok2 := strings.Cut(rest, "\n---\n")
	if !ok || !ok2 {
		return nil, fmt.Errorf("%s: no YAML header", card)
	}
	var h struct {
		Configs []struct {
			DataFiles []struct {
				Path string `yaml:"path"`
			} `yaml:"data_files"`
		} `yaml:"configs"`
	}
	if err := yaml.Unmarshal([]byte(head), &h); err != nil {
		return nil, fmt.Errorf("%s: %w", card, err)
	}
	files := []hub.File{{PathInRepo: "README.md", LocalPath: card}}
	seen := map[string]bool{}
	for _, c := range h.Configs {
		for _, df := range c.DataFiles {
			p := filepath.ToSlash(filepath.Clean(df.Path))
			if seen[p] || strings.HasPrefix(p, "../") || filepath.IsAbs(df.Path) {
				continue
			}
			seen[p] = true
			local := filepath.Join(dir, filepath.FromSlash(p))
			if _, err := os.Stat(local); err != nil {
				return nil, fmt.Errorf("%s names %s: %w", card, p, err)
			}
			files = append(files, hub.File{PathInRepo: p, LocalPath: local})
		}
	}
	if len(files) == 1 {
		return nil, fmt.Errorf("%s names no data files", card)
	}
	return files, nil
}
