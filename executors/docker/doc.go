// Package docker is the Docker driver for executors: it runs the shared
// in-sandbox runner in containers with no network, a read-only root, a tmpfs
// scratch, a non-root user, no capabilities and cgroup limits. Open it with
// executors.Open("docker://IMAGE?pool=N&memory=...").
package docker
