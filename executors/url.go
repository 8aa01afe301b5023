package executors

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
)

// ParseURL is the one parser of executor URLs: bwrap://?memory=512MiB,
// docker://python:3.12-slim?pool=4, docker:python:3.12-slim, or a bare driver
// name ("bwrap"). It checks syntax only; Check also validates the options.
// net/url alone cannot be used: it reads an image tag as a port.
func ParseURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, fmt.Errorf("executors: empty executor URL (want e.g. bwrap:// or docker://IMAGE)")
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		// A bare name with an optional query (bwrap?pool=2), or the opaque
		// form docker:python:3.12-slim.
		name, query, _ := strings.Cut(raw, "?")
		scheme, opaque, _ := strings.Cut(name, ":")
		u := &url.URL{Scheme: scheme, Opaque: opaque, RawQuery: query}
		return u, checkURLSyntax(raw, u)
	}
	hostPath, query, _ := strings.Cut(rest, "?")
	host, path, _ := strings.Cut(hostPath, "/")
	if path != "" {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: host, Path: path, RawQuery: query}
	return u, checkURLSyntax(raw, u)
}

func checkURLSyntax(raw string, u *url.URL) error {
	if u.Scheme == "" || strings.ContainsAny(u.Scheme, " /\t") {
		return fmt.Errorf("executors: bad executor URL %q: no driver name (want e.g. bwrap:// or docker://IMAGE)", raw)
	}
	if _, err := url.ParseQuery(u.RawQuery); err != nil {
		return fmt.Errorf("executors: bad executor URL %q: %w", raw, err)
	}
	return nil
}

// Check parses raw and validates everything about it that does not need the
// sandbox: the driver is registered and every option is known and well-formed
// (sizes, durations, pool > 0, driver-specific keys). validate, run, exec, eval
// and verify all go through it, so a URL that passes here fails only for
// reasons of the host (no bwrap, no Docker engine, no image).
func Check(raw string) error {
	u, err := ParseURL(raw)
	if err != nil {
		return err
	}
	check, _ := checkers.Get(u.Scheme)
	if _, ok := drivers.Get(u.Scheme); !ok {
		return fmt.Errorf("executors: unknown driver %q (built in: %s)", u.Scheme, strings.Join(Drivers(), ", "))
	}
	if check != nil {
		return check(u)
	}
	if _, err := ParseOptions(u); err != nil {
		return fmt.Errorf("%s: %w", u.Scheme, err)
	}
	return nil
}

// Checker validates a driver's URL without opening anything.
type Checker func(u *url.URL) error

// RegisterChecker gives a driver's URL validation to Check; drivers without
// one get ParseOptions with no driver-specific keys. A second checker for
// one scheme panics, as a second driver does.
func RegisterChecker(scheme string, c Checker) { checkers.Add(scheme, c) }

// WithDefaults returns raw with key=value added for each pair whose key raw
// does not set: a command's own defaults (exec's pool=1) never override what
// the user wrote.
func WithDefaults(raw string, kv ...string) (string, error) {
	u, err := ParseURL(raw)
	if err != nil {
		return "", err
	}
	q, _ := url.ParseQuery(u.RawQuery)
	for i := 0; i+1 < len(kv); i += 2 {
		if _, set := q[kv[i]]; !set && kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	u.RawQuery = encodeSorted(q)
	return FormatURL(u), nil
}

// WithImage returns raw naming image where raw names none (no host and
// path, no opaque part, no image=) and its driver runs images, i.e. its
// own checker accepts the URL with the image; any other URL is returned as
// it is. Callers need not know which drivers run images or where a URL
// keeps one.
func WithImage(raw, image string) string {
	u, err := ParseURL(raw)
	if err != nil || u.Opaque != "" || u.Host != "" || u.Path != "" {
		return raw
	}
	if q, _ := url.ParseQuery(u.RawQuery); q.Get("image") != "" {
		return raw
	}
	u.Host = image
	with := FormatURL(u)
	if Check(with) != nil {
		return raw // a driver that runs no image (bwrap) refuses one
	}
	return with
}

// FormatURL renders u as ParseURL reads it back (an image tag stays a tag).
func FormatURL(u *url.URL) string {
	var b strings.Builder
	b.WriteString(u.Scheme)
	if u.Opaque != "" {
		b.WriteString(":" + u.Opaque)
	} else {
		b.WriteString("://" + u.Host + u.Path)
	}
	if u.RawQuery != "" {
		b.WriteString("?" + u.RawQuery)
	}
	return b.String()
}

func encodeSorted(q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		for _, v := range q[k] {
			parts = append(parts, url.QueryEscape(k)+"="+url.QueryEscape(v))
		}
	}
	return strings.Join(parts, "&")
}
