package evaluate_test

import (
	"testing"

	"github.com/codefeedback/codefeedback/internal/evaluate"
)

func TestExtract(t *testing.T) {
	tests := []struct {
		name, answer, entry, want, how string
	}{
		{name: "block defining the entry point wins over an earlier one",
			answer: "Usage:\n```python\nprint(f(1))\n```\nCode:\n```python\ndef f(x):\n    return x\n```\n",
			entry:  "f", want: "def f(x):\n    return x\n", how: evaluate.ExtractBlock},
		{name: "imports from another block are kept",
			answer: "```python\nimport math\nfrom typing import List\n```\n```python\ndef f(x):\n    return math.sqrt(x)\n```",
			entry:  "f", want: "import math\nfrom typing import List\ndef f(x):\n    return math.sqrt(x)\n", how: evaluate.ExtractBlock},
		{name: "demo code dropped, definitions and assignments kept",
			answer: "```python\nimport re\nPAT = re.compile(r'a(b)')\n\ndef f(s):\n    assert s\n    print(s)\n    return PAT.match(s)\n\nassert f('ab')\nprint(f('ab'))\nx = input()\nif __name__ == \"__main__\":\n    f('ab')\nelse:\n    pass\n```",
			entry:  "f", want: "import re\nPAT = re.compile(r'a(b)')\n\ndef f(s):\n    assert s\n    print(s)\n    return PAT.match(s)\n", how: evaluate.ExtractBlock},
		{name: "strings and brackets do not start statements",
			answer: "```python\ndef f():\n    return '''\nprint(1)\n'''\nT = (\n1,\n)\n@dec\n\ndef g(): pass\n```",
			entry:  "f", want: "def f():\n    return '''\nprint(1)\n'''\nT = (\n1,\n)\n@dec\n\ndef g(): pass\n", how: evaluate.ExtractBlock},
		{name: "no block: whole answer", answer: "def f(x): return x", entry: "f", want: "def f(x): return x\n", how: evaluate.ExtractWhole},
		{name: "no block defines it: first block", answer: "```\n    return 1\n```", entry: "f", want: "    return 1\n", how: evaluate.ExtractFirst},
		{name: "other languages ignored", answer: "```bash\npython f.py\n```\n```py\ndef f(): pass\n```", entry: "f", want: "def f(): pass\n", how: evaluate.ExtractBlock},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, how := evaluate.Extract(tc.answer, tc.entry)
			if got != tc.want || how != tc.how {
				t.Errorf("got (%q, %s), want (%q, %s)", got, how, tc.want, tc.how)
			}
		})
	}
}

func TestHumanEvalProgram(t *testing.T) {
	prompt := "import math\n\n\ndef poly(xs):\n    return sum(xs)\n\n\ndef f(x):\n    \"\"\"Doc.\"\"\"\n"
	tests := []struct {
		name, code, want string
		body             bool
	}{
		{name: "full function gets the prompt's imports and helpers", code: "def f(x):\n    return poly([x])\n",
			want: "import math\ndef poly(xs):\n    return sum(xs)\n\n\ndef f(x):\n    return poly([x])\n"},
		{name: "helper redefined by the code is not repeated", code: "def poly(xs):\n    return 0\n\ndef f(x):\n    return 1\n",
			want: "import math\n\n\ndef poly(xs):\n    return 0\n\ndef f(x):\n    return 1\n"},
		{name: "indented body is appended", code: "    return x\n", want: prompt + "    return x\n", body: true},
		{name: "flush-left body is indented", code: "y = x\nreturn y\n", want: prompt + "    y = x\n    return y\n", body: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, body := evaluate.HumanEvalProgram(prompt, "f", tc.code)
			if got != tc.want || body != tc.body {
				t.Errorf("got (%q, %v), want (%q, %v)", got, body, tc.want, tc.body)
			}
		})
	}
}
