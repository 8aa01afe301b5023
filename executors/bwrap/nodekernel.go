package bwrap

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
)

// nodeKernelTarget is where a sandbox finds node's binary without read
// permission (executors/langs.py, NODE_KERNEL_EXE). A process started from
// a file it cannot read is not dumpable, so what a javascript session's
// cells leave behind cannot open the kernel's /proc/PID/mem and read its
// keys; node has no prctl of its own to say so.
const nodeKernelTarget = "/opt/codefeedback/node"

// nodeKernel is the host path of the execute-only copy of the host's node,
// made once per node binary and kept (its name carries the binary's
// identity, so an upgraded node gets a new copy); "" where the host has no
// node or the copy could not be made (javascript sessions then refuse to
// start, saying why).
var nodeKernel = sync.OnceValue(func() string {
	p, err := exec.LookPath("node")
	if err != nil {
		return ""
	}
	if p, err = filepath.EvalSymlinks(p); err != nil {
		return ""
	}
	dst, err := execOnlyCopy(p, nodeKernelDir())
	if err != nil {
		warnNoNodeKernel.Do(func() { log.Printf("bwrap: javascript sessions will not start: %v", err) })
		return ""
	}
	return dst
})

var warnNoNodeKernel sync.Once

// nodeKernelDir is where the copy is kept: a directory every slot uid can
// traverse (root's own cache is not), else the user's cache.
func nodeKernelDir() string {
	if os.Geteuid() == 0 {
		return "/var/cache/codefeedback"
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "codefeedback")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("codefeedback-%d", os.Geteuid()))
}

// execOnlyCopy copies src into dir as a file of mode 0111 named after
// src's path, size, inode and modification time, unless it is there. The
// copy is written under a temporary name and renamed, so concurrent
// launchers (test binaries) never see half a file.
func execOnlyCopy(src, dir string) (string, error) {
	st, err := os.Stat(src)
	if err != nil {
		return "", err
	}
	id := sha256.Sum256(fmt.Appendf(nil, "%s %d %d %d", src, st.Size(), st.ModTime().UnixNano(), fileInode(st)))
	dst := filepath.Join(dir, "node-kernel-"+hex.EncodeToString(id[:8]))
	if have, err := os.Stat(dst); err == nil && have.Size() == st.Size() && have.Mode().Perm() == 0o111 {
		return dst, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("execute-only node: %w", err)
	}
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("execute-only node: %w", err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(dir, ".node-kernel-*")
	if err != nil {
		return "", fmt.Errorf("execute-only node: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, in)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o111)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		return "", fmt.Errorf("execute-only node in %s: %w", dir, err)
	}
	return dst, nil
}

func fileInode(st os.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Ino
	}
	return 0
}
