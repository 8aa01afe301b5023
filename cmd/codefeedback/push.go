package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
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
			"outputs; the card's configs name the data files (Parquet, JSONL) to publish. They go up as the Hub's own uploads " +
			"lay them out: the default config (a Parquet one where there is one) under data/, every other config under a " +
			"folder of its name, as train-0000i-of-0000n files, with the card rewritten to name them. The repository is created when missing (private with --private); files go " +
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
	files, err := cardFiles(o.Dir, o.Repo)
	if err != nil {
		return withCode(exitBadData, fmt.Errorf("push: %w", err)) // DIR, its card or a file it names cannot be read
	}
	defer os.Remove(files[0].LocalPath) // the card as rewritten for the Hub
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

// cardFiles lists what push uploads: the card and the data files its
// configs name, laid out as the Hub's own uploads are (push_to_hub): the
// default config's files under data/, every other config's under a folder
// of its name, each as train-0000i-of-0000n. The default config is a
// Parquet one where there is one (the Hub's viewer and loaders read it
// best). The card goes up rewritten to name those paths; the local card
// and files are left as they are.
func cardFiles(dir, repo string) ([]hub.File, error) {
	card := filepath.Join(dir, "README.md")
	b, err := os.ReadFile(card)
	if err != nil {
		return nil, fmt.Errorf("%w (run `codefeedback report` to write the card)", err)
	}
	rest, ok := strings.CutPrefix(string(b), "---\n")
	head, body, ok2 := strings.Cut(rest, "\n---\n")
	if !ok || !ok2 {
		return nil, fmt.Errorf("%s: no YAML header", card)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(head), &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", card, err)
	}
	configs := hubConfigs(&doc)
	if len(configs) == 0 {
		return nil, fmt.Errorf("%s names no data files", card)
	}
	def := 0
	for i, c := range configs {
		if c.isDefault {
			def = i
		}
	}
	for i, c := range configs {
		if c.parquet() && !configs[def].parquet() {
			def = i
			break
		}
	}
	var files []hub.File
	seen := map[string]bool{}
	for i, c := range configs {
		folder := c.name
		if i == def {
			folder = "data"
		}
		c.setDefault(i == def)
		for j, df := range c.files {
			p := filepath.ToSlash(filepath.Clean(df.Value))
			if strings.HasPrefix(p, "../") || filepath.IsAbs(df.Value) || p == "." {
				return nil, fmt.Errorf("%s names %s, which is not inside %s", card, df.Value, dir)
			}
			local := filepath.Join(dir, filepath.FromSlash(p))
			if _, err := os.Stat(local); err != nil {
				return nil, fmt.Errorf("%s names %s: %w", card, p, err)
			}
			repoPath := fmt.Sprintf("%s/train-%05d-of-%05d%s", folder, j, len(c.files), hubExt(p))
			if !seen[repoPath] {
				seen[repoPath] = true
				files = append(files, hub.File{PathInRepo: repoPath, LocalPath: local})
			}
			df.Value = repoPath
		}
	}
	var out bytes.Buffer
	out.WriteString("---\n")
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", card, err)
	}
	enc.Close()
	out.WriteString("---\n")
	// The card's loading example names local files; on the Hub the
	// repository loads by name, its default config first.
	out.WriteString(loadExample.ReplaceAllString(body, `ds = load_dataset("`+repo+`", split="train")`))
	tmp, err := os.CreateTemp("", "codefeedback-card-*.md")
	if err != nil {
		return nil, err
	}
	defer tmp.Close()
	if _, err := tmp.Write(out.Bytes()); err != nil {
		return nil, err
	}
	return append([]hub.File{{PathInRepo: "README.md", LocalPath: tmp.Name()}}, files...), nil
}

// loadExample is the card's load_dataset line for local files.
var loadExample = regexp.MustCompile(`ds = load_dataset\("(json|parquet)", data_files="[^"]*", split="train"\)`)

// hubExt is a data file's extension, compression included (.jsonl.gz).
func hubExt(p string) string {
	base := path.Base(p)
	if i := strings.Index(base, "."); i >= 0 {
		return base[i:]
	}
	return ""
}

// hubConfig is one entry of the card's configs, as YAML nodes to rewrite.
type hubConfig struct {
	node      *yaml.Node // the config's mapping
	name      string
	files     []*yaml.Node // the data_files' path values
	isDefault bool
}

func (c hubConfig) parquet() bool {
	for _, f := range c.files {
		if !strings.HasSuffix(f.Value, ".parquet") {
			return false
		}
	}
	return len(c.files) > 0
}

// setDefault sets or drops the config's `default: true`.
func (c hubConfig) setDefault(on bool) {
	m := c.node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "default" {
			if on {
				m.Content[i+1].Value, m.Content[i+1].Tag = "true", "!!bool"
				return
			}
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
	if on {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "default"},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	}
}

// hubConfigs finds the configs of a card's header and their data files.
func hubConfigs(doc *yaml.Node) []hubConfig {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	var out []hubConfig
	seq := mapValue(doc.Content[0], "configs")
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil
	}
	for _, c := range seq.Content {
		if c.Kind != yaml.MappingNode {
			continue
		}
		hc := hubConfig{node: c}
		if n := mapValue(c, "config_name"); n != nil {
			hc.name = n.Value
		}
		if d := mapValue(c, "default"); d != nil {
			hc.isDefault = d.Value == "true"
		}
		if dfs := mapValue(c, "data_files"); dfs != nil && dfs.Kind == yaml.SequenceNode {
			for _, df := range dfs.Content {
				if p := mapValue(df, "path"); p != nil && p.Kind == yaml.ScalarNode {
					hc.files = append(hc.files, p)
				}
			}
		}
		if hc.name != "" && len(hc.files) > 0 {
			out = append(out, hc)
		}
	}
	return out
}

// mapValue is the value of key in mapping m, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
