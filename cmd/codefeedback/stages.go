package main

// Every built-in stage and service, so pipeline files can name them.
import _ "github.com/codefeedback/codefeedback/internal/builtin"
