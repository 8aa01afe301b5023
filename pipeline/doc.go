// Package pipeline is the engine behind `codefeedback run`: the pipeline file
// (YAML), the stage registry, and a runner that streams items through stages
// with bounded concurrency, deterministic output order, retries, dead
// letters, a content-addressed result store in the run directory, crash
// resume, sharding, progress and a run manifest.
//
// Stages register a name, default options and a factory (see Register and
// Stage); the engine owns everything else. Records travel between stages as
// Item envelopes (id, kind, JSON data), so stages of different record types
// chain. Each per-item result is cached under a hash of the stage name, its
// settings, its Version (prompt texts) and the input item, so a re-run only
// computes what changed.
package pipeline
