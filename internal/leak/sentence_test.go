package leak

import (
	"context"
	"testing"

	"github.com/codefeedback/codefeedback/schema"
)

// A dialogue that shares a stock phrase or a textbook definition with a
// task's statement, but no whole sentence of it, is not attributed to the
// task; one that copies a sentence whole is. The two negatives are the
// false positives the audit gave on real Evol-Instruct records (the
// Wikipedia definition of a prime that HumanEval/78 quotes; HumanEval/66's
// opening words).
func TestNGramsNeedAWholeSentence(t *testing.T) {
	hexKey := schema.Problem{Query: schema.Query{ID: "HumanEval/78", Text: "def hex_key(num):\n    \"\"\"You have been tasked to write a function that receives \n    a hexadecimal number as a string and counts the number of hexadecimal \n    digits that are primes (prime number, or a prime, is a natural number \n    greater than 1 that is not a product of two smaller natural numbers).\n    Hexadecimal digits are 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, A, B, C, D, E, F.\n    \"\"\"\n"},
		Solution: "    primes = ('2', '3', '5', '7', 'B', 'D')\n    total = 0\n    for i in range(0, len(num)):\n        if num[i] in primes:\n            total += 1\n    return total\n"}
	digitSum := schema.Problem{Query: schema.Query{ID: "HumanEval/66", Text: "def digitSum(s):\n    \"\"\"Task\n    Write a function that takes a string as input and returns the sum of the upper characters only'\n    ASCII codes.\n    \"\"\"\n"},
		Solution: "    if s == \"\": return 0\n    return sum(ord(char) if char.isupper() else 0 for char in s)\n"}
	a, err := New([]Benchmark{{Name: "humaneval", Problems: []schema.Problem{hexKey, digitSum}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, user string
		want       string // the task flagged by n-grams, or ""
	}{
		{"a definition the task quotes", "Suggest a python function which prints all the prime numbers up to a number.\n\nNote:\nA prime number is a natural number greater than 1 that is not a product of two smaller natural numbers.", ""},
		{"a stock opening", "Create a dictionary with the keywords 'a' to 'g'. Then, write a function that takes a string as input and returns the sum of the values of each character in the string according to the dictionary.", ""},
		{"a sentence of the statement whole", "Please solve: write a function that receives a hexadecimal number as a string and counts the number of hexadecimal digits that are primes. You have been tasked to write a function that receives a hexadecimal number as a string and counts the number of hexadecimal digits that are primes (prime number, or a prime, is a natural number greater than 1 that is not a product of two smaller natural numbers).", "HumanEval/78"},
	} {
		d := &schema.Dialogue{ID: "d", Messages: []schema.Message{{Role: schema.RoleUser, Content: tc.user}, {Role: schema.RoleAssistant, Content: "Sure."}}}
		got := ""
		for _, f := range a.Check(context.Background(), d, 0).Findings {
			if f.Method == MethodNGram {
				got = f.TaskID
			}
		}
		if got != tc.want {
			t.Errorf("%s: n-gram finding for %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The months of 31 days are common knowledge (generic.py), not a table
// only HumanEval/124's solution holds; its whole solution still is found.
func TestMonthTableIsGeneric(t *testing.T) {
	validDate := schema.Problem{Query: schema.Query{ID: "HumanEval/124", Text: "def valid_date(date):\n    \"\"\"Return True if the date string mm-dd-yyyy is valid.\"\"\"\n"},
		Solution: "    try:\n        date = date.strip()\n        month, day, year = date.split('-')\n        month, day, year = int(month), int(day), int(year)\n        if month < 1 or month > 12:\n            return False\n        if month in [1,3,5,7,8,10,12] and day < 1 or day > 31:\n            return False\n        if month in [4,6,9,11] and day < 1 or day > 30:\n            return False\n        if month == 2 and day < 1 or day > 29:\n            return False\n    except:\n        return False\n\n    return True\n"}
	a, err := New([]Benchmark{{Name: "humaneval", Problems: []schema.Problem{validDate}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, code string
		want       bool
	}{
		{"days in the current month", "import datetime\n\nnow = datetime.datetime.now()\ncurrent_month = now.month\n\nif current_month in [1, 3, 5, 7, 8, 10, 12]:\n    num_days = 31\nelif current_month in [4, 6, 9, 11]:\n    num_days = 30\nelse:\n    num_days = 28\n\nprint(num_days)\n", false},
		{"the solution, renamed", "def check(s):\n    try:\n        s = s.strip()\n        m, d, y = s.split('-')\n        m, d, y = int(m), int(d), int(y)\n        if m < 1 or m > 12:\n            return False\n        if m in [1,3,5,7,8,10,12] and d < 1 or d > 31:\n            return False\n        if m in [4,6,9,11] and d < 1 or d > 30:\n            return False\n        if m == 2 and d < 1 or d > 29:\n            return False\n    except:\n        return False\n\n    return True\n", true},
	} {
		d := &schema.Dialogue{ID: "d", Messages: []schema.Message{{Role: schema.RoleUser, Content: "Show the number of days in a month."}, {Role: schema.RoleAssistant, Content: "```python\n" + tc.code + "```"}}}
		fs := a.Check(context.Background(), d, 0).Findings
		if got := len(fs) > 0; got != tc.want {
			t.Errorf("%s: findings %v, want flagged=%v", tc.name, fs, tc.want)
		}
	}
}
