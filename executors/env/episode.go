package env

import "fmt"

// Episode is the episode state every environment keeps: begun by a Reset
// that succeeded, ended by a submit. The zero value is before any Reset.
type Episode struct {
	begun, done bool
}

// Begin starts an episode; Reset calls it once the task is set up.
func (ep *Episode) Begin() { ep.begun, ep.done = true, false }

// Begun reports whether a Reset started an episode (Score may still run
// after its end).
func (ep *Episode) Begun() bool { return ep.begun }

// Step is what every environment's Step does first: it refuses a step
// before Reset or after the episode ended (the errors named by name), and
// plays a submit action through score, which ends the episode. handled
// reports that it did either; then r and err are the step's result, and
// otherwise the environment runs the action itself.
func (ep *Episode) Step(name, action string, score func(arg string) (StepResult, error)) (r StepResult, handled bool, err error) {
	if !ep.begun {
		return StepResult{}, true, fmt.Errorf("%s: Step before Reset", name)
	}
	if ep.done {
		return StepResult{}, true, fmt.Errorf("%s: episode is done; call Reset", name)
	}
	arg, ok := SubmitArg(action)
	if !ok {
		return StepResult{}, false, nil
	}
	r, err = score(arg)
	r.Done, ep.done = true, true
	return r, true, err
}
