package bashenv

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// entry is what the reward and the resync know about one path of a tree.
type entry struct {
	mode os.FileMode // type and permission bits
	hash string      // md5 of a file's content, a symlink's target
	size int64
}

// manifest maps a tree's paths (slash-separated, relative to the sandbox's
// "/": "testbed/dir1/a.txt") to their entries. Directories are included.
type manifest map[string]entry

// scan reads a tree without following symlinks. names are the top-level
// entries to read (the variant's mounts).
func scan(root string, names []string) (manifest, error) {
	m := manifest{}
	for _, n := range names {
		err := filepath.WalkDir(filepath.Join(root, n), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			info, err := d.Info()
			if err != nil {
				return nil
			}
			e := entry{mode: info.Mode(), size: info.Size()}
			switch {
			case info.Mode().IsRegular():
				h, err := md5File(p)
				if err != nil {
					// Unreadable (e.g. chmod 000 by a non-root host): its
					// identity is still its metadata.
					h = "unreadable:" + info.Mode().String()
				}
				e.hash = h
			case info.Mode()&os.ModeSymlink != 0:
				t, _ := os.Readlink(p)
				e.hash = "link:" + t
			}
			m[rel] = e
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("scanning %s: %w", n, err)
		}
	}
	return m, nil
}

// md5File hashes the regular file at p. The tree belongs to the sandbox,
// whose processes may still run while the host reads it: a file swapped
// for a symlink (to a host file) or a FIFO (a host-side hang) after the
// walk saw it is refused, not followed or blocked on.
func md5File(p string) (string, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return "", err
	} else if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file (%s)", p, st.Mode().Type())
	}
	h := md5.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// tracked reports whether git would track the entry: files and symlinks;
// git does not track directories.
func (e entry) tracked() bool { return !e.mode.IsDir() }

// change is one line of `git status --short` as InterCode parses it:
// (path, status).
type change struct {
	Path   string `json:"path"`
	Status string `json:"status"` // "M", "D", "??"
}

// gitStatus lists the changes of cur against base the way `git status
// --short` does in InterCode's containers (a git repository at "/" committed
// after the setup script ran): tracked files deleted (D) or modified in
// content, type or executable bit (M); untracked files (??) collapsed to the
// highest directory that holds no tracked file, shown with a trailing slash;
// empty directories are invisible to git.
func gitStatus(base, cur manifest) []change {
	var out []change
	for p, b := range base {
		if !b.tracked() {
			continue
		}
		c, ok := cur[p]
		switch {
		case !ok || c.mode.IsDir():
			out = append(out, change{p, "D"})
		case c.hash != b.hash || c.mode.Type() != b.mode.Type() || (c.mode&0o100) != (b.mode&0o100):
			out = append(out, change{p, "M"})
		}
	}
	// Directories that hold a tracked file (at any depth) in base and
	// still exist: untracked files below them are listed individually.
	trackedDir := map[string]bool{}
	for p, b := range base {
		if !b.tracked() {
			continue
		}
		for d := parent(p); d != ""; d = parent(d) {
			trackedDir[d] = true
		}
	}
	shown := map[string]bool{}
	for p, c := range cur {
		if !c.tracked() {
			continue
		}
		if b, ok := base[p]; ok && b.tracked() {
			continue
		}
		// Collapse to the highest ancestor that holds no tracked file.
		show := p
		for d := parent(p); d != ""; d = parent(d) {
			if trackedDir[d] {
				break
			}
			show = d + "/"
		}
		if !shown[show] {
			shown[show] = true
			out = append(out, change{show, "??"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func parent(p string) string {
	p = strings.TrimSuffix(p, "/")
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	return p[:i]
}

// pathHash is md5sum / md5deep -r of a changed path, as InterCode compares
// them: a file's content hash, or a directory's sorted listing of its files'
// relative paths and hashes.
func pathHash(m manifest, p string) string {
	p = strings.TrimSuffix(p, "/")
	e, ok := m[p]
	if !ok {
		return "missing"
	}
	if !e.mode.IsDir() {
		return e.hash
	}
	var lines []string
	for q, f := range m {
		if strings.HasPrefix(q, p+"/") && f.tracked() {
			lines = append(lines, q+" "+f.hash)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// icPathHash is what InterCode's hash commands print for a changed path:
// `md5sum PATH` when the path has a "." anywhere (a file's content, through
// a symlink; an error for a directory or a dangling link), else `md5deep -r
// PATH`, which its images do not have, so every such path compares equal.
func icPathHash(m manifest, p string) string {
	if !strings.Contains(p, ".") {
		return "md5deep: executable file not found"
	}
	p = strings.TrimSuffix(p, "/")
	for hops := 0; hops < 40; hops++ {
		e, ok := m[p]
		switch {
		case !ok:
			return "md5sum: " + p + ": No such file or directory"
		case e.mode.IsDir():
			return "md5sum: " + p + ": Is a directory"
		case e.mode&os.ModeSymlink != 0:
			t := strings.TrimPrefix(e.hash, "link:")
			if strings.HasPrefix(t, "/") {
				p = strings.TrimPrefix(path.Clean(t), "/")
			} else {
				p = path.Join(path.Dir(p), t)
			}
			continue
		}
		return e.hash
	}
	return "md5sum: too many levels of symbolic links"
}

// statKey identifies an inode's state: a write, chmod, rename in or out or
// link changes its ctime, which no unprivileged process can set back.
type statKey struct {
	ino, nlink uint64
	ctimeNS    int64
	mtimeNS    int64
	size       int64
	mode, uid  uint32
}

func keyOf(info fs.FileInfo) statKey {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return statKey{}
	}
	return statKey{
		ino: st.Ino, nlink: uint64(st.Nlink), ctimeNS: st.Ctim.Sec*1e9 + st.Ctim.Nsec, mtimeNS: st.Mtim.Sec*1e9 + st.Mtim.Nsec,
		size: st.Size, mode: st.Mode, uid: st.Uid,
	}
}

// copyTree copies src to dst (which must not exist) preserving modes,
// symlinks and access and modification times (passed through rt unless
// nil), and makes everything owned by uid:gid (-1: leave as created).
func copyTree(src, dst string, uid, gid int, rt retimer) error {
	info, err := os.Lstat(src)
	if err != nil {
		return err
	}
	switch {
	case info.Mode()&os.ModeSymlink != 0:
		t, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := os.Symlink(t, dst); err != nil {
			return err
		}
	case info.IsDir():
		if err := os.Mkdir(dst, 0o700); err != nil {
			return err
		}
		ents, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := copyTree(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), uid, gid, rt); err != nil {
				return err
			}
		}
	case info.Mode().IsRegular():
		if err := copyFile(src, dst); err != nil {
			return err
		}
	default:
		return nil // devices, fifos: a setup script has no business making them
	}
	if uid >= 0 {
		if err := os.Lchown(dst, uid, gid); err != nil {
			return err
		}
	}
	if info.Mode()&os.ModeSymlink == 0 {
		if err := os.Chmod(dst, info.Mode().Perm()|info.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky)); err != nil {
			return err
		}
		mt := info.ModTime()
		at := mt
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			at = time.Unix(st.Atim.Sec, st.Atim.Nsec)
		}
		if err := os.Chtimes(dst, rt.apply(at), rt.apply(mt)); err != nil {
			return err
		}
	}
	return nil
}

// retimer moves the times a setup script gave by running (rather than by
// touch -d) to just now, as if the file system had just been built, as
// InterCode's image is before its runs: `find -mmin -60` then finds them
// whatever the age of our cached template. Nil leaves times alone.
type retimer func(time.Time) time.Time

func (rt retimer) apply(t time.Time) time.Time {
	if rt == nil {
		return t
	}
	return rt(t)
}

// buildWindow is when a template's setup script ran; times inside it were
// set by the build.
type buildWindow struct {
	Start, End time.Time
}

// since returns the retimer that shifts times inside w by now-w.End.
func (w buildWindow) since(now time.Time) retimer {
	if w.End.IsZero() {
		return nil
	}
	shift := now.Sub(w.End)
	lo, hi := w.Start.Add(-time.Second), w.End.Add(time.Second)
	return func(t time.Time) time.Time {
		if t.After(lo) && t.Before(hi) {
			return t.Add(shift)
		}
		return t
	}
}

// pruneEmptyDirs removes the directories below root that hold no file (at
// any depth): InterCode resets with `git clean -fd`, which deletes them, so
// no episode ever sees them. root itself stays.
func pruneEmptyDirs(root string) error {
	ents, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(root, e.Name())
		if err := pruneEmptyDirs(p); err != nil {
			return err
		}
		if sub, err := os.ReadDir(p); err == nil && len(sub) == 0 {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// replica is one per-episode copy of a variant's tree, kept in sync with the
// template: Sync puts back only what an episode changed.
type replica struct {
	tpl, dir string // template root, replica root (both hold names)
	names    []string
	root     bool // dir is the sandbox's /: other top-level entries go too (but driverTop)
	uid, gid int
	retime   retimer
	state    map[string]statKey // after the last sync, by relative path
	// gitTimes: what a resync puts back gets the time of the resync, as
	// InterCode's `git reset --hard` writes the files it restores (its
	// containers carry that history from task to task; see shell
	// "intercode"). Otherwise everything gets the template's times back.
	gitTimes bool
	synced   bool // a first Sync has copied everything
	now      retimer
}

// restoreTime is the retimer for what this Sync puts back.
func (r *replica) restoreTime() retimer {
	if r.gitTimes && r.synced {
		return r.now
	}
	return r.retime
}

// Sync makes the replica equal to the template again. The first call copies
// everything below the top-level directories (which must exist); later calls compare each entry's inode state (statKey) with
// the state after the last sync and re-copy only what moved, so an episode
// that only read files costs a stat per entry. Nothing may run in the
// replica's sandbox meanwhile.
func (r *replica) Sync() error {
	if r.state == nil {
		// First sync: the top-level directories exist (they are mount
		// points and must keep their inodes); everything below is copied.
		r.state = map[string]statKey{}
	}
	if r.gitTimes && r.synced {
		now := time.Now()
		r.now = func(time.Time) time.Time { return now }
	}
	defer func() { r.synced = true }()
	changed := false
	if r.root {
		// Entries the episode added to / (a link, an archive) go.
		want := map[string]bool{}
		for _, n := range r.names {
			want[n] = true
		}
		have, err := topNames(r.dir)
		if err != nil {
			return fmt.Errorf("resyncing /: %w", err)
		}
		for _, n := range have {
			if !want[n] && !driverTop[n] {
				changed = true
				if err := os.RemoveAll(filepath.Join(r.dir, n)); err != nil {
					return fmt.Errorf("resyncing /: %w", err)
				}
			}
		}
	}
	for _, n := range r.names {
		c, err := r.refill(n)
		if err != nil {
			return fmt.Errorf("resyncing %s: %w", n, err)
		}
		changed = changed || c
	}
	if changed {
		return r.record()
	}
	return nil
}

// refill brings rel back to the template's state and reports whether it
// had to change anything.
func (r *replica) refill(rel string) (bool, error) {
	src, dst := filepath.Join(r.tpl, rel), filepath.Join(r.dir, rel)
	info, err := os.Lstat(src)
	if err != nil {
		return false, err
	}
	dinfo, err := os.Lstat(dst)
	if errors.Is(err, fs.ErrNotExist) {
		return true, copyTree(src, dst, r.uid, r.gid, r.restoreTime())
	}
	if err != nil {
		return false, err
	}
	same := r.state[rel] == keyOf(dinfo)
	if !info.IsDir() || !dinfo.IsDir() {
		if same && info.IsDir() == dinfo.IsDir() {
			return false, nil
		}
		if err := os.RemoveAll(dst); err != nil {
			return false, err
		}
		return true, copyTree(src, dst, r.uid, r.gid, r.restoreTime())
	}
	changed := false
	ents, err := os.ReadDir(src)
	if err != nil {
		return false, err
	}
	if !same {
		// Entries came or went (or the directory's mode moved).
		want := map[string]bool{}
		for _, e := range ents {
			want[e.Name()] = true
		}
		have, err := os.ReadDir(dst)
		if err != nil {
			return false, err
		}
		for _, e := range have {
			if !want[e.Name()] {
				changed = true
				if err := os.RemoveAll(filepath.Join(dst, e.Name())); err != nil {
					return false, err
				}
			}
		}
	}
	for _, e := range ents {
		c, err := r.refill(filepath.Join(rel, e.Name()))
		if err != nil {
			return false, err
		}
		changed = changed || c
	}
	if changed || !same {
		if r.uid >= 0 {
			if err := os.Lchown(dst, r.uid, r.gid); err != nil {
				return false, err
			}
		}
		if err := os.Chmod(dst, info.Mode().Perm()); err != nil {
			return false, err
		}
		rt := r.restoreTime()
		if err := os.Chtimes(dst, rt.apply(info.ModTime()), rt.apply(info.ModTime())); err != nil {
			return false, err
		}
		changed = true
	}
	return changed, nil
}

// scan reads what the reward compares of the replica: a root replica's
// top-level entries but ignoredTop (the episode may have added some).
func (r *replica) scan() (manifest, error) {
	if !r.root {
		return scan(r.dir, r.names)
	}
	names, err := topNames(r.dir)
	if err != nil {
		return nil, err
	}
	return scan(r.dir, compared(names, true))
}

func (r *replica) record() error {
	st := map[string]statKey{}
	for _, n := range r.names {
		err := filepath.WalkDir(filepath.Join(r.dir, n), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(r.dir, p)
			st[rel] = keyOf(info)
			return nil
		})
		if err != nil {
			return err
		}
	}
	r.state = st
	return nil
}
