package simulate

import "github.com/codefeedback/codefeedback/internal/feedbackloop"

// The stage's settings are the loop's options; the loop itself lives in
// internal/feedbackloop so other stages (leetcode) use it without importing
// this stage.
type Options = feedbackloop.Options

// DefaultOptions are the stage's defaults.
var DefaultOptions = feedbackloop.DefaultOptions
