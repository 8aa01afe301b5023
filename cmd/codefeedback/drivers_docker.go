//go:build !nodocker

package main

// The Docker driver registers the "docker" executor scheme in init; build
// with -tags nodocker to leave it (and the Docker client) out.
import _ "github.com/codefeedback/codefeedback/executors/docker"
