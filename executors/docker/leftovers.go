package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// Containers lists the sandbox containers (running or not) created by the
// process named by owner, or by any process when owner is "".
func Containers(ctx context.Context, cli *client.Client, owner string) ([]container.Summary, error) {
	f := filters.NewArgs(filters.Arg("label", LabelSandbox+"=1"))
	if owner != "" {
		f.Add("label", LabelOwner+"="+owner)
	}
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("docker: list sandbox containers: %w", err)
	}
	return cs, nil
}

// RemoveLeftovers force-removes sandbox containers whose creating process on
// this host no longer runs (it crashed or was killed before its Close). A
// live process's containers, and other hosts', are left alone, so several
// codefeedback processes can share one engine. It returns how many it removed.
func RemoveLeftovers(ctx context.Context, cli *client.Client) (int, error) {
	cs, err := Containers(ctx, cli, "")
	if err != nil {
		return 0, err
	}
	host, _ := os.Hostname()
	n := 0
	var errs []error
	for _, c := range cs {
		if !ownerGone(c.Labels[LabelOwner], host) {
			continue
		}
		err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("docker: remove leftover container %.12s: %w", c.ID, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// ownerGone reports whether owner ("host/pid/start") names a process on this
// host that has exited. An owner label that cannot be parsed counts as gone:
// only this package writes the label.
func ownerGone(owner, host string) bool {
	parts := strings.Split(owner, "/")
	if len(parts) != 3 {
		return true
	}
	if parts[0] != host {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil {
		return true
	}
	return procStart(pid) != parts[2]
}

// pullImage pulls ref and drains the progress stream, returning the first
// error the engine reports in it.
func pullImage(ctx context.Context, cli *client.Client, ref string) error {
	rc, err := cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return fmt.Errorf("docker: pull %s: %w", ref, err)
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("docker: pull %s: read progress: %w", ref, err)
		}
		if msg.Error != "" {
			return fmt.Errorf("docker: pull %s: %s", ref, msg.Error)
		}
	}
}
