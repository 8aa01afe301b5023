package bashenv

// Bounded room for episode replicas. A replica is a host directory bound
// writable into the agent's sandbox, so without a bound of its own an agent
// could fill the host's disk (or /dev/shm, i.e. memory) by splitting its
// writes across files, processes and actions: RLIMIT_FSIZE bounds one file
// only, and a memory cgroup charge is no bound either (an instance killed
// for memory is replaced by a fresh cgroup, and the pages stay). So every
// area a sandbox writes (the agent's and the gold's replica, the CTF task
// directory, a setup script's build) is a file system of its own, sized to
// the template it holds plus a fixed allowance:
//   - tmpfs (shell "session"): mounted with size= and nr_inodes=;
//   - ext4 (shell "intercode"): a sparse image in the temporary directory,
//     loop-mounted and unlinked at once, so a directory's size is 4096 as on
//     InterCode's ext4/overlay (`find -size`);
//   - where neither can be mounted (not root, no loop device), the next
//     one down, with a one-line warning; without privileges plain
//     directories, bounded per file only.
// A full area answers ENOSPC ("No space left on device") and the episode
// goes on; the reset puts the template back. Areas are unmounted at Close;
// those of a crashed process (its lock free) are cleaned by the next Env.

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/codefeedback/codefeedback/executors"
)

// Params of the bash and ctf environments that bound an episode's writes.
const (
	// ParamDisk is the bytes an episode may add to its replica (e.g.
	// "256MiB"); default: the executor's scratch size (bwrap disk=, docker
	// tmp=), else DefaultDisk.
	ParamDisk = "disk"
	// ParamInodes is the files and directories it may add; default one per
	// 16 KiB of disk.
	ParamInodes = "inodes"
)

// DefaultDisk is the allowance when neither the Param nor the executor sets it.
const DefaultDisk = 256 << 20

// areaSlack is room beyond the template and the allowance: the driver's
// mount points in a root replica and rounding (a page, a block).
const (
	areaSlackBytes  = 64 << 10
	areaSlackInodes = 16
)

// Kinds of area file system.
const (
	fsTmpfs = "tmpfs"
	fsExt4  = "ext4"
	fsPlain = "" // unbounded: a plain directory
)

// scratch is an Env's base directory: a plain directory that holds a lock
// (while the Env lives) and one mount point per area.
type scratch struct {
	dir    string
	want   string // fsExt4 or fsTmpfs
	disk   int64
	inodes int64
	lock   *os.File
	areas  map[string]string // mounted area path -> its kind
}

// scratchPrefix names base directories; lockName is the lock inside one.
const (
	scratchPrefix = "codefeedback-bash-"
	lockName      = ".lock"
)

// newScratch makes a base directory in parent, after cleaning those of
// crashed processes there.
func newScratch(parent, want string, disk, inodes int64) (*scratch, error) {
	cleanStale(parent)
	dir, err := os.MkdirTemp(parent, scratchPrefix)
	if err != nil {
		return nil, err
	}
	// Sandboxes bind from dir as the slot's uid (bwrap run by root), so it
	// must be searchable by others; its entries are owned per slot.
	if err := os.Chmod(dir, 0o711); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// The lock appears under its final name already held, so a cleaner
	// never sees a live base directory's lock free.
	tmp := filepath.Join(dir, lockName+".new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		if err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
			err = os.Rename(tmp, filepath.Join(dir, lockName))
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	return &scratch{dir: dir, want: want, disk: disk, inodes: inodes, lock: f, areas: map[string]string{}}, nil
}

// limitsFrom reads the allowance from Params, else the executor.
func limitsFrom(ex executors.Executor, params map[string]string) (disk, inodes int64, err error) {
	disk = DefaultDisk
	if ex != nil && ex.Info().DiskBytes > 0 {
		disk = ex.Info().DiskBytes // declared in Info, so wrappers (WithCache) pass it on
	}
	if v := params[ParamDisk]; v != "" {
		if disk, err = executors.ParseBytes(v); err != nil || disk < 1<<20 {
			return 0, 0, fmt.Errorf("param %s=%q: want a size of at least 1MiB (e.g. 256MiB)", ParamDisk, v)
		}
	}
	inodes = disk / (16 << 10)
	if v := params[ParamInodes]; v != "" {
		if inodes, err = strconv.ParseInt(v, 10, 64); err != nil || inodes < 16 {
			return 0, 0, fmt.Errorf("param %s=%q: want a count of at least 16", ParamInodes, v)
		}
	}
	return disk, inodes, nil
}

// area returns an empty directory dir/name holding a file system with room
// for a copy of the template trees srcs plus the allowance. An
// existing area of that name is unmounted and removed first; nothing may
// use it then.
func (s *scratch) area(name string, srcs ...string) (string, error) {
	p := filepath.Join(s.dir, name)
	if err := s.release(p); err != nil {
		return "", err
	}
	if err := os.Mkdir(p, 0o711); err != nil {
		return "", err
	}
	var need footprint
	for _, src := range srcs {
		f, err := measureTree(src, s.want)
		if err != nil {
			return "", fmt.Errorf("sizing %s: %w", src, err)
		}
		need.bytes += f.bytes
		need.inodes += f.inodes
	}
	bytes := need.bytes + s.disk + areaSlackBytes
	inodes := need.inodes + s.inodes + areaSlackInodes
	kind := s.want
	for {
		var err error
		switch kind {
		case fsExt4:
			err = mountExt4(p, bytes, inodes)
		case fsTmpfs:
			err = mountTmpfs(p, bytes, inodes)
		case fsPlain:
			return p, nil
		}
		if err == nil {
			s.areas[p] = kind
			// mkfs leaves its root 0755; the caller sets the mode it needs.
			if err := os.Chmod(p, 0o711); err != nil {
				return "", err
			}
			return p, nil
		}
		next := fsPlain
		if kind == fsExt4 && !errors.Is(err, errNoPrivilege) {
			next = fsTmpfs
		}
		warnOnce(kind, next, err)
		kind = next
		s.want = next // the next area will not do better
	}
}

// kind reports the file system areas get (fsPlain: unbounded).
func (s *scratch) kind() string { return s.want }

var warned sync.Map

// warnOnce logs, once per process and fallback, what an area lost.
func warnOnce(from, to string, err error) {
	if _, dup := warned.LoadOrStore(from+">"+to, true); dup {
		return
	}
	switch to {
	case fsTmpfs:
		log.Printf("bashenv: episode replicas on a sized tmpfs, not ext4 (%v): directory sizes differ from InterCode's (find -size)", err)
	default:
		log.Printf("bashenv: cannot mount a sized file system for episode replicas (%v): an agent's writes into its task files are bounded per file only, not in total; run as root to bound them", err)
	}
}

// release unmounts and removes an area (if it exists).
func (s *scratch) release(p string) error {
	if _, ok := s.areas[p]; ok {
		if err := unmount(p); err != nil {
			return fmt.Errorf("unmounting %s: %w", p, err)
		}
		delete(s.areas, p)
	}
	if err := os.RemoveAll(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// close unmounts every area and removes the base directory.
func (s *scratch) close() error {
	var first error
	for p := range s.areas {
		if err := s.release(p); err != nil && first == nil {
			first = err
		}
	}
	if err := os.RemoveAll(s.dir); err != nil && first == nil {
		first = err
	}
	s.lock.Close()
	return first
}

func unmount(p string) error {
	err := unix.Unmount(p, 0)
	if errors.Is(err, unix.EBUSY) {
		// A process still holds it (a sandbox being torn down): detach it
		// now; the kernel frees it with the last user.
		err = unix.Unmount(p, unix.MNT_DETACH)
	}
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil // not a mount point (any more)
	}
	return err
}

// footprint is what a tree takes on an area's file system.
type footprint struct{ bytes, inodes int64 }

const block = 4096

// measureTree counts a template's entries and what a copy takes on a kind
// of file system: whole 4 KiB blocks (pages) per file; on ext4 also its
// directories' blocks (tmpfs keeps them, and symlinks shorter than 128
// bytes, in the inode) and a block per symlink (a long target takes one).
func measureTree(root, kind string) (footprint, error) {
	var f footprint
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		f.inodes++
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type().IsRegular():
			f.bytes += (info.Size() + block - 1) / block * block
		case kind == fsTmpfs:
			if d.Type()&fs.ModeSymlink != 0 && info.Size() >= 128 {
				f.bytes += block
			}
		case d.IsDir():
			// ext4's directories grow by blocks and never shrink.
			f.bytes += max((info.Size()+block-1)/block*block, block)
		default:
			f.bytes += block
		}
		return nil
	})
	return f, err
}

// errNoPrivilege: this process may not mount.
var errNoPrivilege = errors.New("no privilege to mount")

func mountErr(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w: %v", errNoPrivilege, err)
	}
	return err
}

// mountTmpfs mounts a tmpfs of size bytes and inodes entries at p.
func mountTmpfs(p string, bytes, inodes int64) error {
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0711", bytes, inodes+1) // +1: its root
	if err := unix.Mount("tmpfs", p, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting tmpfs: %w", mountErr(err))
	}
	return nil
}

// mountExt4 makes an ext4 file system on a sparse image beside p in which
// an unprivileged writer finds exactly bytes free and at least inodes free
// inodes (ext4 rounds a block group's inodes up to a whole inode-table
// block: at most 15 more per 128 MiB), loop-mounts it at p and unlinks the
// image: the mount holds the only reference, so unmounting frees it all.
func mountExt4(p string, bytes, inodes int64) error {
	if _, err := mkfsPath(); err != nil {
		return err
	}
	want := (bytes + block - 1) / block
	n := inodes + 11 // ext4 reserves inodes 1..10; +1 for lost+found's until removed
	// Metadata: the inode table, a bitmap pair and descriptors per group,
	// and ext4's reserve for delayed allocation (2% up to 4096 blocks),
	// which unprivileged writers cannot use.
	size := want + n*256/block + want/40 + 256
	for try := 0; try < 3; try++ {
		avail, dev, err := makeExt4(p, size, n)
		if err != nil {
			return err
		}
		if avail >= want {
			if avail > want {
				trimExt4(dev, avail-want)
			}
			return nil
		}
		if err := unmount(p); err != nil {
			return err
		}
		size += want - avail + 64
	}
	return errors.New("ext4 image: could not size it")
}

// mkfsPath finds mkfs.ext4, also where PATH lacks the sbin directories.
func mkfsPath() (string, error) {
	if p, err := exec.LookPath("mkfs.ext4"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("mkfs.ext4 not found (Debian package e2fsprogs)")
}

// ext4HashSeed is every image's directory hash seed (any fixed value).
const ext4HashSeed = "c0de7eed-0000-4000-8000-000000000019"

// makeExt4 creates, formats and mounts an image of size blocks and returns
// the blocks free to an unprivileged writer and its loop device.
func makeExt4(p string, size, inodes int64) (int64, string, error) {
	img := p + ".img"
	f, err := os.OpenFile(img, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, "", err
	}
	defer os.Remove(img)
	defer f.Close()
	if err := f.Truncate(size * block); err != nil {
		return 0, "", err
	}
	// No journal (nothing to recover: a crash discards the replica), no
	// resize reserve, no root reserve, 4 KiB blocks whatever the size (a
	// small file system would get 1 KiB blocks and 1 KiB directories), and
	// a fixed directory hash seed: ext4 lists a directory in hash order, so
	// a random seed per image would give `ls -f`, `find` and `du` another
	// order in every episode, and the agent's another than the gold's.
	mkfs, err := mkfsPath()
	if err != nil {
		return 0, "", err
	}
	out, err := exec.Command(mkfs, "-q", "-F", "-b", "4096", "-I", "256", "-m", "0",
		"-N", strconv.FormatInt(inodes, 10), "-O", "^has_journal,^resize_inode",
		"-E", "nodiscard,lazy_itable_init=1,hash_seed="+ext4HashSeed, img).CombinedOutput()
	if err != nil {
		return 0, "", fmt.Errorf("mkfs.ext4: %v: %s", err, strings.TrimSpace(string(out)))
	}
	dev, err := attachLoop(f)
	if err != nil {
		return 0, "", err
	}
	// noinit_itable: the kernel would otherwise zero every unused inode
	// table in the background, writing the whole table to the image.
	err = mountNamed(dev.Name(), p, "ext4", unix.MS_NOSUID|unix.MS_NODEV, "noinit_itable")
	dev.Close() // with autoclear, the mount now holds the loop device
	if err != nil {
		return 0, "", fmt.Errorf("mounting ext4 on %s: %w", dev.Name(), mountErr(err))
	}
	// InterCode's / holds no lost+found; fsck has no use for it here.
	if err := os.Remove(filepath.Join(p, "lost+found")); err != nil {
		unmount(p)
		return 0, "", err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		unmount(p)
		return 0, "", err
	}
	return int64(st.Bavail), dev.Name(), nil
}

// trimExt4 withholds excess blocks from unprivileged writers by raising
// ext4's reserved clusters (sysfs); on failure the bound is a little
// looser, never tighter.
func trimExt4(dev string, excess int64) {
	knob := filepath.Join("/sys/fs/ext4", filepath.Base(dev), "reserved_clusters")
	b, err := os.ReadFile(knob)
	if err != nil {
		return
	}
	cur, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return
	}
	_ = os.WriteFile(knob, []byte(strconv.FormatInt(cur+excess, 10)), 0o644)
}

// sourceName is the source every ext4 area is mounted under, as mountinfo
// and so `df` show it: InterCode's container showed "overlay" for its /,
// and the agent's and the gold's replicas must not differ by a loop
// device's number.
const sourceName = "overlay"

// mountNamed mounts the block device dev at p under the source sourceName.
// The kernel takes a relative source from the mounting thread's working
// directory and keeps the name as given, so the mount runs on a thread of
// its own (unshared CLONE_FS: its working directory is not the process's)
// inside a directory where sourceName links to dev.
func mountNamed(dev, p, fstype string, flags uintptr, data string) error {
	p, err := filepath.Abs(p)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(filepath.Dir(p), ".dev-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.Symlink(dev, filepath.Join(dir, sourceName)); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread, with its own working directory,
		// ends with this goroutine instead of serving others.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			errc <- fmt.Errorf("unshare CLONE_FS: %w", err)
			return
		}
		if err := unix.Chdir(dir); err != nil {
			errc <- err
			return
		}
		errc <- unix.Mount(sourceName, p, fstype, flags, data)
	}()
	return <-errc
}

// attachLoop binds f to a free loop device with autoclear (it detaches
// when its last user goes) and returns the device, open.
func attachLoop(f *os.File) (*os.File, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("loop devices: %w", mountErr(err))
	}
	defer ctl.Close()
	for try := 0; try < 16; try++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("loop devices: %w", mountErr(err))
		}
		dev, err := os.OpenFile("/dev/loop"+strconv.Itoa(n), os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("loop device %d: %w", n, mountErr(err))
		}
		if err := unix.IoctlSetInt(int(dev.Fd()), unix.LOOP_SET_FD, int(f.Fd())); err != nil {
			dev.Close()
			if errors.Is(err, unix.EBUSY) {
				continue // another process took it first
			}
			return nil, fmt.Errorf("loop device %d: %w", n, mountErr(err))
		}
		info := unix.LoopInfo64{Flags: unix.LO_FLAGS_AUTOCLEAR}
		copy(info.File_name[:], f.Name())
		if err := unix.IoctlLoopSetStatus64(int(dev.Fd()), &info); err != nil {
			unix.IoctlSetInt(int(dev.Fd()), unix.LOOP_CLR_FD, 0)
			dev.Close()
			return nil, fmt.Errorf("loop device %d: %w", n, err)
		}
		return dev, nil
	}
	return nil, errors.New("loop devices: none free")
}

// mountPoints lists the mount points in this process's namespace below
// dir (deepest last), with their sources.
func mountPoints(dir string) map[string]string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint opts ... - fstype source superopts
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		src := ""
		for i, x := range fields {
			if x == "-" && i+2 < len(fields) {
				src = fields[i+2]
			}
		}
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out[mp] = src
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cleanStale removes the base directories in parent whose lock is free
// (their process died without Close), detaching their mounts first. Base
// directories without a lock (older versions, or being made) are left.
func cleanStale(parent string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, d := range ents {
		if !d.IsDir() || !strings.HasPrefix(d.Name(), scratchPrefix) {
			continue
		}
		dir := filepath.Join(parent, d.Name())
		f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
			f.Close()
			continue // alive
		}
		ok := true
		for mp := range mountPoints(dir) {
			if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
				ok = false
			}
		}
		if ok {
			os.RemoveAll(dir)
		}
		f.Close()
	}
}
