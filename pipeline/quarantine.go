package pipeline

import "strings"

// Rejection is one model answer (or one item) a quality gate turned away.
// Stages report them through gates.Record with a failing verdict (or
// Stats.Reject directly); the engine writes them, in input order, with the
// stage, the item and the setting that governs the gate, to the stage's
// quarantine file and the run's quarantine.jsonl, for fresh and cached
// items alike. What a gate rejected is never published.
type Rejection struct {
	Stage   string `json:"stage,omitempty"`
	ItemID  string `json:"item_id,omitempty"`
	Gate    string `json:"gate"`
	Reason  string `json:"reason"`
	Detail  string `json:"detail,omitempty"`
	Setting string `json:"setting,omitempty"` // the stage setting that bounds this gate's rejected share
}

// maxDetail bounds a rejection's detail: enough to read what the model
// said, not a whole program.
const maxDetail = 4000

// Reject records that gate turned something away for reason, with detail
// (the rejected text). In an item recorder (ItemStats) the rejection is
// stored with the item's cached result and reaches the quarantine once the
// item is done; on a stage's Services.Stats (whole-set stages) it reaches
// the quarantine when the stage ends. Reject on a nil *Stats does nothing.
// It does not count the verdict: gates.Record does both.
func (s *Stats) Reject(gate, reason, detail string) {
	if s == nil {
		return
	}
	if len(detail) > maxDetail {
		detail = detail[:maxDetail] + "..."
	}
	s.mu.Lock()
	s.rejects = append(s.rejects, Rejection{Gate: gate, Reason: reason, Detail: strings.ToValidUTF8(detail, "")})
	s.mu.Unlock()
}

// takeRejects returns and clears the recorded rejections.
func (s *Stats) takeRejects() []Rejection {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rejects
	s.rejects = nil
	return r
}
