package main

// The docker sandbox driver registers the "docker" executor scheme in init.
import _ "github.com/codefeedback/codefeedback/executors/docker"
