package bashenv

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/codefeedback/codefeedback/executors/env"
)

// SystemRootEnv names the environment variable that points at the NL2Bash
// system root (`make nl2bash-image` builds it there too).
const SystemRootEnv = "CODEFEEDBACK_NL2BASH_ROOT"

// systemMarker is the file `make nl2bash-image` leaves in a complete system
// root: the hash of its package list.
const systemMarker = ".codefeedback-nl2bash"

// Image is the docker image of the NL2Bash system (`make nl2bash-image`),
// which the bash environment's commands open on docker.
const Image = env.BashImage

// SystemRootTarget is the make target that builds the system root and the
// docker image.
const SystemRootTarget = "make nl2bash-image"

// DefaultSystemRoot is where `make nl2bash-image` puts the system root
// when $CODEFEEDBACK_NL2BASH_ROOT is unset: the user cache, or, for root,
// /var/cache/codefeedback (bwrap then runs as a slot uid, which must reach
// the directory: root's home is private).
func DefaultSystemRoot() (string, error) {
	if d := os.Getenv(SystemRootEnv); d != "" {
		return d, nil
	}
	if os.Geteuid() == 0 {
		return "/var/cache/codefeedback/nl2bash/root", nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("bashenv: locating the user cache: %w", err)
	}
	return filepath.Join(d, "codefeedback", "nl2bash", "root"), nil
}

// SystemRoot is a built NL2Bash system: the system directories of the image
// InterCode's Bash tasks ran on (its package list on Debian minbase: no
// compiler, no database server), mounted read-only as the sandbox's /usr,
// /etc and /var on bwrap.
type SystemRoot struct {
	Dir  string
	Hash string // the package list's hash (part of a template's key)
}

// FindSystemRoot returns the system root at dir (DefaultSystemRoot when
// empty), or an error saying why it is not usable.
func FindSystemRoot(dir string) (SystemRoot, error) {
	if dir == "" {
		d, err := DefaultSystemRoot()
		if err != nil {
			return SystemRoot{}, err
		}
		dir = d
	}
	b, err := os.ReadFile(filepath.Join(dir, systemMarker))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return SystemRoot{}, fmt.Errorf("bashenv: no NL2Bash system root at %s (%s builds it)", dir, SystemRootTarget)
		}
		return SystemRoot{}, fmt.Errorf("bashenv: NL2Bash system root: %w", err)
	}
	for _, d := range []string{"usr/bin/bash", "usr/bin/python3", "etc", "var"} {
		if _, err := os.Stat(filepath.Join(dir, d)); err != nil {
			return SystemRoot{}, fmt.Errorf("bashenv: NL2Bash system root %s is incomplete (%s again): %w", dir, SystemRootTarget, err)
		}
	}
	return SystemRoot{Dir: dir, Hash: strings.TrimSpace(string(b))}, nil
}

var warnHostSystem sync.Once

// systemFor resolves Params["system"]: "host" runs on the host's /usr;
// a path names a system root; empty takes the default one if built, else
// the host's with a one-line warning. An explicitly named root that is
// not usable is an error.
func systemFor(param string) (SystemRoot, error) {
	switch param {
	case "host":
		return SystemRoot{}, nil
	case "":
		sr, err := FindSystemRoot("")
		if err != nil {
			warnHostSystem.Do(func() {
				log.Printf("bashenv: %v; bash tasks run on this host's /usr instead of InterCode's image's tools", err)
			})
			return SystemRoot{}, nil
		}
		return sr, nil
	default:
		return FindSystemRoot(param)
	}
}
