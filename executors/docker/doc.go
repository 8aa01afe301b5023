// Package docker is the Docker driver for executors (scheme "docker"). Each
// sandbox instance is one container running the shared in-sandbox runner
// (executors.RunnerArgv) as PID 1: no network (NetworkMode none, only lo),
// read-only root file system, a size-limited tmpfs /tmp as scratch and a
// small /dev/shm, a non-root uid and gid of its own per pool slot
// (a uid block per executor from FirstSlotUID, so process limits are per slot and per executor), every capability dropped,
// no-new-privileges, cgroup memory (swap off), CPU and pids limits, nofile,
// fsize and core ulimits, and an environment holding only PATH, HOME and
// LANG (plus the image's own ENV). executors.NewPool keeps containers warm,
// forks one child per run inside them, and replaces a container that a run
// tampered with or that died. A run killed by the container's memory cgroup
// is reported as OOM: the runner compares the cgroup's oom_kill counter
// (memory.events on cgroup v2, memory.oom_control on v1) before and after.
//
// URL (executors.ParseOptions plus driver keys):
//
//	docker://IMAGE?pool=N&memory=512MiB&timeout=5s&cpu=5s&pids=64&output=64KiB&file=64MiB&nofile=256
//	  &container_memory=768MiB  cgroup memory of a container (default: memory + 256MiB)
//	  &cpus=1                   CPU quota of a container
//	  &tmp=128MiB               size of the /tmp tmpfs
//	  &pull=1                   pull IMAGE when it is missing (never done otherwise)
//	  &init=1                   docker-init as PID 1 instead of the runner
//
// IMAGE defaults to $CODEFEEDBACK_SANDBOX_IMAGE, else codefeedback-sandbox:bookworm
// (built offline by `make sandbox-image`). Any image with python3 (or python)
// on PATH works, such as python:3.12-slim.
//
// Every container is labelled codefeedback.sandbox=1 and with its creating
// process (codefeedback.owner=host/pid/start-time); Open removes containers
// whose creator has exited, and an executor's Close removes all of its own.
package docker
