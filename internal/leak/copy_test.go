package leak

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/codefeedback/codefeedback/schema"
)

// Decontaminate keeps every kept record's bytes: spacing, key order,
// escapes, CRLF line ends, blank lines, a BOM, and a JSON array's layout.
func TestDecontaminateByteForByte(t *testing.T) {
	leak := `{"id": "bad", "messages": [{"role": "user", "content": "x"}]}`
	cases := []struct {
		name, in, want string
		drop           []int
	}{
		{"jsonl crlf spaced", "{ \"messages\":[{\"role\":\"user\",\"content\":\"a\\u00e9\"}], \"id\" : 1 }\r\n" + leak + "\r\n\r\n{\"id\":3,\"messages\":[{\"role\":\"user\",\"content\":\"c\"}]}\r\n",
			"{ \"messages\":[{\"role\":\"user\",\"content\":\"a\\u00e9\"}], \"id\" : 1 }\r\n\r\n{\"id\":3,\"messages\":[{\"role\":\"user\",\"content\":\"c\"}]}\r\n", []int{1}},
		{"jsonl bom no final newline", "\xEF\xBB\xBF" + leak + "\n{\"id\":2,\"messages\":[]}", "\xEF\xBB\xBF{\"id\":2,\"messages\":[]}", []int{0}},
		{"json array", "[\n  {\n    \"id\": 1,\n    \"messages\": []\n  },\n  " + leak + ",\n  {\"id\": 3, \"messages\": []}\n]\n",
			"[\n{\n    \"id\": 1,\n    \"messages\": []\n  },\n{\"id\": 3, \"messages\": []}\n]\n", []int{1}},
	}
	for _, c := range cases {
		for _, ext := range []string{".jsonl", ".jsonl.gz", ".jsonl.zst"} {
			t.Run(c.name+ext, func(t *testing.T) {
				dir := t.TempDir()
				in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out"+ext)
				os.WriteFile(in, []byte(c.in), 0o644)
				flagged := map[int][]schema.Finding{}
				for _, k := range c.drop {
					flagged[k] = []schema.Finding{{Method: MethodLines}}
				}
				kept, err := Decontaminate(context.Background(), in, out, filepath.Join(dir, "removed.jsonl"), flagged)
				if err != nil {
					t.Fatal(err)
				}
				// Read back through the same decompression the product uses.
				f, _ := os.Open(out)
				defer f.Close()
				r, done, err := decompressed(f, schema.CompressionOf(out))
				if err != nil {
					t.Fatal(err)
				}
				defer done()
				got := make([]byte, 0, len(c.want))
				buf := make([]byte, 4096)
				for {
					n, err := r.Read(buf)
					got = append(got, buf[:n]...)
					if err != nil {
						break
					}
				}
				if string(got) != c.want {
					t.Errorf("got  %q\nwant %q", got, c.want)
				}
				if kept != 2-boolInt(c.name == "jsonl bom no final newline") {
					t.Errorf("kept %d", kept)
				}
			})
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// An output that is the input under another name is refused before
// anything is written.
func TestDecontaminateRefusesItsInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "same.jsonl")
	body := []byte(`{"id":1,"messages":[{"role":"user","content":"a"}]}` + "\n")
	os.WriteFile(in, body, 0o644)
	os.Symlink(in, filepath.Join(dir, "link.jsonl"))
	os.Link(in, filepath.Join(dir, "hard.jsonl"))
	wd, _ := os.Getwd()
	os.Chdir(dir)
	defer os.Chdir(wd)
	for _, out := range []string{"./same.jsonl", "same.jsonl", filepath.Join(dir, ".", "same.jsonl"), "link.jsonl", "hard.jsonl"} {
		_, err := Decontaminate(context.Background(), in, out, "", map[int][]schema.Finding{0: nil})
		if !errors.Is(err, ErrSameFile) {
			t.Errorf("out %s: got %v, want ErrSameFile", out, err)
		}
		// The removed file may not be the input either.
		if _, err := Decontaminate(context.Background(), in, filepath.Join(dir, "other.jsonl"), out, nil); !errors.Is(err, ErrSameFile) {
			t.Errorf("removed %s: got %v, want ErrSameFile", out, err)
		}
	}
	if b, _ := os.ReadFile(in); string(b) != string(body) {
		t.Errorf("input changed: %q", b)
	}
}
