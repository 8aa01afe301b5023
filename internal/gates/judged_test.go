package gates

import "testing"

func TestCleanReason(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"  Incorrect: the loop  stops one\nshort of the end.  ", "the loop stops one short of the end."},
		{`"false. it returns the sum plus one"`, "it returns the sum plus one"},
		{"It adds one:\n```python\nreturn sum(xs)\n```\nto the result.", "It adds one: to the result."},
		{"", ""},
	} {
		if got := CleanReason(c.in); got != c.want {
			t.Errorf("CleanReason(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestReadableReason(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"", false},
		{"Incorrect.", false},
		{"The code is not correct.", false},
		{"The output is wrong and it does not work.", false},
		{"The line `return not (x)` negates the sum.", true},
		{"It returns the count of vowels plus one.", true},
	} {
		if got := ReadableReason(CleanReason(c.in)); got != c.want {
			t.Errorf("ReadableReason(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestRunContradicts(t *testing.T) {
	for _, c := range []struct {
		task, output string
		want         bool
	}{
		{"Write a function to find the similar elements from the given two tuple lists.", "False", true},
		{"Write a function to find the similar elements from the given two tuple lists.", "(4, 5)", false},
		{"Write a function to count the vowels in a string.", "None", true},
		{"Write a function to caluclate area of a parallelogram.", "False", true},
		{"Write a function to count the vowels in a string.\n\nassert f('a') == 1", "3\nTrue", true},
		// a yes-or-no task prints a truth value
		{"Write a python function to check whether the two numbers differ at one bit position only or not.", "False", false},
		{"Write a function to find whether a number is even.", "True", false},
		// a task that asks for no value the check can tell
		{"Write a function that matches a word containing z.", "False", false},
		{"Write a function to find the largest integers from a given list.", "", false},
	} {
		if got := RunContradicts(c.task, c.output) != ""; got != c.want {
			t.Errorf("RunContradicts(%q, %q) = %v, want %v", c.task, c.output, got, c.want)
		}
	}
}
