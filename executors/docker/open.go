package docker

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// ImageEnv names the environment variable that sets the default image.
const ImageEnv = "CODEFEEDBACK_SANDBOX_IMAGE"

// options is everything a docker:// URL configures.
type options struct {
	cfg     Config
	pool    int           // warm instances
	pull    bool          // pull a missing image
	timeout time.Duration // default per-run wall clock (0: executors default)
}

// parseURL reads docker://IMAGE?pool=N&memory=...&cpus=...&pids=...&tmp=...&pull=1&init=1&timeout=...
// The image is the URL's host and path, or its opaque part (docker:python:3.12-slim),
// or ?image=; none means $CODEFEEDBACK_SANDBOX_IMAGE or DefaultConfig.Image. Go's URL
// parser rejects a tag in the host part (docker://python:3.12-slim reads ":3.12-slim"
// as a bad port), so tagged images need one of the other two forms unless the
// caller rewrites the URL before parsing it. Unknown parameters are errors
// so typos are not silently ignored.
func parseURL(u *url.URL) (options, error) {
	o := options{cfg: DefaultConfig, pool: 2}
	if s := os.Getenv(ImageEnv); s != "" {
		o.cfg.Image = s
	}
	if img := imageFromURL(u); img != "" {
		o.cfg.Image = img
	}
	q := u.Query()
	for key, vals := range q {
		v := vals[len(vals)-1]
		var err error
		switch key {
		case "image":
			o.cfg.Image = v
		case "pool":
			o.pool, err = strconv.Atoi(v)
			if err == nil && (o.pool < 1 || o.pool > 256) {
				err = fmt.Errorf("want 1..256")
			}
		case "memory":
			o.cfg.Memory, err = parseBytes(v)
			if err == nil && o.cfg.Memory < 32<<20 {
				err = fmt.Errorf("want at least 32MiB")
			}
		case "cpus":
			var f float64
			f, err = strconv.ParseFloat(v, 64)
			if err == nil && (f <= 0 || f > 1024) {
				err = fmt.Errorf("want > 0")
			}
			o.cfg.NanoCPUs = int64(f * 1e9)
		case "pids":
			o.cfg.Pids, err = strconv.ParseInt(v, 10, 64)
			if err == nil && o.cfg.Pids < 8 {
				err = fmt.Errorf("want at least 8")
			}
		case "tmp":
			o.cfg.TmpBytes, err = parseBytes(v)
			if err == nil && o.cfg.TmpBytes < 1<<20 {
				err = fmt.Errorf("want at least 1MiB")
			}
		case "pull":
			o.pull, err = strconv.ParseBool(v)
		case "init":
			o.cfg.Init, err = strconv.ParseBool(v)
		case "timeout":
			o.timeout, err = time.ParseDuration(v)
			if err == nil && o.timeout <= 0 {
				err = fmt.Errorf("want > 0")
			}
		default:
			return options{}, fmt.Errorf("docker: unknown URL parameter %q (known: image, pool, memory, cpus, pids, tmp, pull, init, timeout)", key)
		}
		if err != nil {
			return options{}, fmt.Errorf("docker: URL parameter %s=%q: %w", key, v, err)
		}
	}
	return o, nil
}

// imageFromURL rebuilds the image reference from docker://HOST/PATH. An image
// with a registry port (docker://reg:5000/img:tag) parses with the port in
// Host, and a tag colon lands in Host or Path; both are kept verbatim.
func imageFromURL(u *url.URL) string {
	if u.Opaque != "" { // docker:python:3.12-slim
		return u.Opaque
	}
	return strings.TrimPrefix(u.Host+u.Path, "/")
}

// parseBytes reads sizes such as 512MiB, 512M, 1g, 1GB or 1048576.
// K/M/G (with or without "iB" or "B") are powers of 1024, as in Docker.
func parseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(t, suf.s) {
			t, mult = strings.TrimSuffix(t, suf.s), suf.m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q (want e.g. 512MiB)", s)
	}
	return n * mult, nil
}
