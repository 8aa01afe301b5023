package docker

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/executors"
)

// ImageEnv names the environment variable that sets the default image.
const ImageEnv = "CODEFEEDBACK_SANDBOX_IMAGE"

// extraKeys are the URL parameters only this driver knows.
var extraKeys = []string{"cpus", "tmp", "pull", "init", "container_memory"}

// options is everything a docker:// URL configures.
type options struct {
	cfg  Config
	pull bool
	exec executors.Options // the keys every driver shares (pool, per-run limits)
}

// parseURL reads docker://IMAGE?pool=N&memory=...&... (see the package doc).
// The image is the URL's host and path, its opaque part (docker:python:3.12-slim)
// or ?image=; none means $CODEFEEDBACK_SANDBOX_IMAGE or DefaultConfig.Image.
// Container limits follow each run's limits (memory plus Headroom, pids plus
// PidsHeadroom) unless container_memory fixes them. Unknown parameters are errors.
func parseURL(u *url.URL) (options, error) {
	eo, err := executors.ParseOptions(u, extraKeys...)
	if err != nil {
		return options{}, fmt.Errorf("docker: %w", err)
	}
	o := options{cfg: DefaultConfig, exec: eo}
	if s := os.Getenv(ImageEnv); s != "" {
		o.cfg.Image = s
	}
	switch {
	case eo.Image != "":
		o.cfg.Image = eo.Image
	case u.Opaque != "":
		o.cfg.Image = u.Opaque
	}
	lim := eo.Limits.WithDefaults(executors.DefaultLimits)
	o.cfg.Memory = lim.MemoryBytes + Headroom
	o.cfg.Pids = int64(lim.Processes) + PidsHeadroom
	o.cfg.FileBytes = lim.FileBytes
	if n := int64(lim.OpenFiles); n > o.cfg.OpenFiles {
		o.cfg.OpenFiles = n
	}
	for key, vals := range eo.Extra {
		v := vals[len(vals)-1]
		var err error
		switch key {
		case "container_memory":
			o.cfg.Memory, err = executors.ParseBytes(v)
			o.cfg.RunLimits = false // a fixed container limit
			if err == nil && o.cfg.Memory < 32<<20 {
				err = fmt.Errorf("want at least 32MiB")
			}
		case "cpus":
			var f float64
			f, err = strconv.ParseFloat(v, 64)
			if err == nil && (f <= 0 || f > 1024) {
				err = fmt.Errorf("want a number of CPUs > 0")
			}
			o.cfg.NanoCPUs = int64(f * 1e9)
		case "tmp":
			o.cfg.TmpBytes, err = executors.ParseBytes(v)
			if err == nil && o.cfg.TmpBytes < 1<<20 {
				err = fmt.Errorf("want at least 1MiB")
			}
		case "pull":
			o.pull, err = strconv.ParseBool(v)
		case "init":
			o.cfg.Init, err = strconv.ParseBool(v)
		}
		if err != nil {
			return options{}, fmt.Errorf("docker: URL parameter %s=%q: %w", key, v, err)
		}
	}
	if o.cfg.Image == "" || strings.ContainsAny(o.cfg.Image, " \t\n") {
		return options{}, fmt.Errorf("docker: bad image name %q", o.cfg.Image)
	}
	return o, nil
}
