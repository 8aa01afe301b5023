package pipeline

import "fmt"

// PassThrough says once, loudly, that the stage of svc passed every one of
// its n items through untouched, and why (a short key such as "no_model"
// or "no_queries", and a sentence saying what to change): a WARN log line
// naming the stage, the count and the reason, and the statistics
// "passed_through" (n) and "passed_through/<why>" (1) in the manifest, for
// the report. Call it once per run of the stage (from All, or from Check
// in a per-item stage).
func PassThrough(svc *Services, why string, n float64, reason string) {
	if svc == nil {
		return
	}
	svc.Stats.Set("passed_through", n)
	svc.Stats.Set("passed_through/"+why, 1)
	if svc.Logger != nil {
		svc.Logger.Warn(fmt.Sprintf("stage %s passed all %.0f items through: %s", svc.Name, n, reason),
			"passed_through", n, "reason", why)
	}
}
