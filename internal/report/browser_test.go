package report

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromium finds headless Chromium. In CI (CI=true) a missing browser fails
// the test, since .ci/setup installs it; elsewhere the test skips.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true but no chromium on PATH: .ci/setup should install Debian's chromium package")
	}
	t.Skip("skipping browser test: chromium is not installed (apt-get install chromium); CI runs it")
	return ""
}

// runChromium runs one headless Chromium command on url with a fresh
// profile and returns its stdout and stderr.
func runChromium(t *testing.T, bin, url string, extra ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000"}
	args = append(append(args, extra...), url)
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, errb.String())
	}
	return out.String(), errb.String()
}

// consoleLine matches what Chromium logs for a page's console messages and
// uncaught exceptions with --enable-logging=stderr.
var consoleLine = regexp.MustCompile(`(?m)^.*:CONSOLE(?:\(\d+\))?[:\]].*$`)

// consoleErrors returns the page's console output lines. The report's
// script logs nothing, so any console line is a problem.
func consoleErrors(stderr string) []string {
	return consoleLine.FindAllString(stderr, -1)
}

// requiredIDs are the elements every report must have.
var requiredIDs = []string{"overview", "stages", "failures", "section-filter", "section-pack", "section-simulate",
	"section-correct", "section-audit", "dataset", "dialogues", "search", "search-count", "report-data"}

// TestReportInBrowser opens the sample run's report in headless Chromium:
// it takes a screenshot, fails on console errors or missing sections, and
// checks that the id search (driven through the URL's #q= fragment) hides
// every dialogue but the one searched for.
func TestReportInBrowser(t *testing.T) {
	bin := chromium(t)
	s := runSample(t)
	report, err := filepath.Abs(s.written.Report)
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + report

	png := filepath.Join(t.TempDir(), "report.png")
	runChromium(t, bin, url, "--hide-scrollbars", "--window-size=1280,2600", "--screenshot="+png)
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) || len(b) < 10_000 {
		t.Fatalf("screenshot %s: %d bytes, err %v; want a PNG", png, len(b), err)
	}
	if dst := os.Getenv("REPORT_SCREENSHOT"); dst != "" {
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot written to %s", dst)
	}

	dom, stderr := runChromium(t, bin, url, "--dump-dom")
	if errs := consoleErrors(stderr); len(errs) > 0 {
		t.Errorf("console output on load:\n%s", strings.Join(errs, "\n"))
	}
	for _, id := range requiredIDs {
		if !strings.Contains(dom, `id="`+id+`"`) {
			t.Errorf("rendered page lacks element #%s", id)
		}
	}
	data := embedded(t, dom)
	for _, sec := range data.Sections {
		if sec.NotRun && !strings.Contains(dom, "stage not run (no "+sec.Type) {
			t.Errorf("section %s: no 'stage not run' note", sec.Type)
		}
	}
	if len(data.SampleIDs) < 2 {
		t.Fatalf("sample has %d dialogues; the search check needs two", len(data.SampleIDs))
	}

	// Search: the script reads #q= on load and hides non-matching dialogues.
	want := data.SampleIDs[1]
	dom, stderr = runChromium(t, bin, url+"#q="+want, "--dump-dom")
	if errs := consoleErrors(stderr); len(errs) > 0 {
		t.Errorf("console output while searching:\n%s", strings.Join(errs, "\n"))
	}
	tag := regexp.MustCompile(`<details class="([^"]*)" data-id="([^"]+)"`)
	shown := 0
	for _, m := range tag.FindAllStringSubmatch(dom, -1) {
		hidden := strings.Contains(m[1], "hidden")
		if m[2] == want && hidden {
			t.Errorf("searched dialogue %s is hidden", want)
		}
		if m[2] != want && !hidden && !strings.Contains(m[2], want) {
			t.Errorf("dialogue %s is shown while searching for %s", m[2], want)
		}
		if !hidden {
			shown++
		}
	}
	if shown != 1 || !strings.Contains(dom, "1 of ") {
		t.Errorf("search for %s: %d dialogues shown; want 1 and the count updated", want, shown)
	}
}

// TestConsoleCheckCatchesErrors is the browser check's negative control: a
// page whose script throws must be reported.
func TestConsoleCheckCatchesErrors(t *testing.T) {
	bin := chromium(t)
	p := filepath.Join(t.TempDir(), "broken.html")
	page := "<!DOCTYPE html><html><body><p id=x>x</p><script>notDefined();</script></body></html>"
	if err := os.WriteFile(p, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr := runChromium(t, bin, "file://"+p, "--dump-dom")
	if errs := consoleErrors(stderr); len(errs) == 0 {
		t.Errorf("a page throwing ReferenceError produced no console line; stderr:\n%s", lastLines(stderr, 20))
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

var _ = io.Discard
