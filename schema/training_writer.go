package schema

import (
	"fmt"
	"maps"
)

// Parquet rows of the training layouts: conversational columns are
// LIST<STRUCT<role, content>>, standard ones VARCHAR; the execution
// columns are JSON text.
type (
	dpoConvRow struct {
		ID                string           `parquet:"id"`
		Prompt            []ParquetMessage `parquet:"prompt,list"`
		Chosen            []ParquetMessage `parquet:"chosen,list"`
		Rejected          []ParquetMessage `parquet:"rejected,list"`
		RejectedError     string           `parquet:"rejected_error"`
		ChosenExecution   string           `parquet:"chosen_execution"`
		RejectedExecution string           `parquet:"rejected_execution"`
		DialogueID        string           `parquet:"dialogue_id"`
	}
	dpoStdRow struct {
		ID                string `parquet:"id"`
		Prompt            string `parquet:"prompt"`
		Chosen            string `parquet:"chosen"`
		Rejected          string `parquet:"rejected"`
		RejectedError     string `parquet:"rejected_error"`
		ChosenExecution   string `parquet:"chosen_execution"`
		RejectedExecution string `parquet:"rejected_execution"`
		DialogueID        string `parquet:"dialogue_id"`
	}
	ktoConvRow struct {
		ID         string           `parquet:"id"`
		Prompt     []ParquetMessage `parquet:"prompt,list"`
		Completion []ParquetMessage `parquet:"completion,list"`
		Label      bool             `parquet:"label"`
		Error      string           `parquet:"error"`
		Execution  string           `parquet:"execution"`
		DialogueID string           `parquet:"dialogue_id"`
	}
	ktoStdRow struct {
		ID         string `parquet:"id"`
		Prompt     string `parquet:"prompt"`
		Completion string `parquet:"completion"`
		Label      bool   `parquet:"label"`
		Error      string `parquet:"error"`
		Execution  string `parquet:"execution"`
		DialogueID string `parquet:"dialogue_id"`
	}
	rlConvRow struct {
		DataSource  string           `parquet:"data_source"`
		Prompt      []ParquetMessage `parquet:"prompt,list"`
		Ability     string           `parquet:"ability"`
		RewardModel RLReward         `parquet:"reward_model"`
		ExtraInfo   RLExtra          `parquet:"extra_info"`
	}
	rlStdRow struct {
		DataSource  string   `parquet:"data_source"`
		Prompt      string   `parquet:"prompt"`
		Ability     string   `parquet:"ability"`
		RewardModel RLReward `parquet:"reward_model"`
		ExtraInfo   RLExtra  `parquet:"extra_info"`
	}
)

func pmsgs(v any) []ParquetMessage {
	cm, _ := v.([]ChatMessage)
	out := make([]ParquetMessage, len(cm))
	for i, m := range cm {
		out[i] = ParquetMessage(m)
	}
	return out
}

func str(v any) string { s, _ := v.(string); return s }

// rowSink writes records of one Go type into JSONL or Parquet.
type rowSink[R any] struct {
	put   func(*R) error
	close func() error
	abort func()
}

// newSink opens out for records R; Parquet rows come from conv (one of
// the row types above, chosen by the style).
func newSink[R any, P any](out string, o ExportOptions, conv func(*R) P, size func(*P) int64) (*rowSink[R], error) {
	s := &rowSink[R]{}
	if IsParquet(out) {
		pw, err := newParquetWriter(out, size, ParquetCompression(o.Compression))
		if err != nil {
			return nil, err
		}
		s.put = func(r *R) error { return pw.add(conv(r)) }
		s.close, s.abort = pw.Close, pw.Abort
		return s, nil
	}
	jw, err := CreateWriter[R](out)
	if err != nil {
		return nil, err
	}
	s.put = func(r *R) error { return jw.Write(*r) }
	s.close, s.abort = jw.Close, jw.Abort
	return s, nil
}

func rowSize[P any](*P) int64 { return 4 << 10 } // records are a few KB; row groups stay within budget

// trainingSink opens the sink for o.To in o's style.
func trainingSink(out string, o ExportOptions, tm *trainingMiner) (func(*Dialogue) (int, error), func() error, func(), error) {
	switch o.To {
	case ExportDPO:
		return styledFeed(out, o, onJudged(tm, tm.pairs), func(r *PairRecord) dpoStdRow {
			return dpoStdRow{r.ID, str(r.Prompt), str(r.Chosen), str(r.Rejected), r.RejectedError, r.ChosenExecution, r.RejectedExecution, r.DialogueID}
		}, func(r *PairRecord) dpoConvRow {
			return dpoConvRow{r.ID, pmsgs(r.Prompt), pmsgs(r.Chosen), pmsgs(r.Rejected), r.RejectedError, r.ChosenExecution, r.RejectedExecution, r.DialogueID}
		})
	case ExportKTO:
		return styledFeed(out, o, onJudged(tm, tm.unpaired), func(r *UnpairedRecord) ktoStdRow {
			return ktoStdRow{r.ID, str(r.Prompt), str(r.Completion), r.Label, r.Error, r.Execution, r.DialogueID}
		}, func(r *UnpairedRecord) ktoConvRow {
			return ktoConvRow{r.ID, pmsgs(r.Prompt), pmsgs(r.Completion), r.Label, r.Error, r.Execution, r.DialogueID}
		})
	case ExportRL:
		return styledFeed(out, o, onJudged(tm, tm.rl), func(r *RLRecord) rlStdRow {
			return rlStdRow{r.DataSource, str(r.Prompt), r.Ability, r.RewardModel, r.ExtraInfo}
		}, func(r *RLRecord) rlConvRow {
			return rlConvRow{r.DataSource, pmsgs(r.Prompt), r.Ability, r.RewardModel, r.ExtraInfo}
		})
	}
	return nil, nil, nil, fmt.Errorf("not a training layout: %s", o.To)
}

// styledFeed opens the sink of mine's records in o's style (rows made by
// std for the standard style, by conv for the conversational one) and
// returns what feeds it a dialogue, closes it and aborts it.
func styledFeed[R, S, C any](out string, o ExportOptions, mine func(*Dialogue) []R, std func(*R) S, conv func(*R) C) (func(*Dialogue) (int, error), func() error, func(), error) {
	var s *rowSink[R]
	var err error
	if o.Style == StyleStandard {
		s, err = newSink(out, o, std, rowSize[S])
	} else {
		s, err = newSink(out, o, conv, rowSize[C])
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return feed(s, mine), s.close, s.abort, nil
}

func feed[R any](s *rowSink[R], mine func(*Dialogue) []R) func(*Dialogue) (int, error) {
	return func(d *Dialogue) (int, error) {
		recs := mine(d)
		for i := range recs {
			if err := s.put(&recs[i]); err != nil {
				return i, err
			}
		}
		return len(recs), nil
	}
}

// newTrainingWriter is NewDialogueWriter for the training layouts: each
// dialogue yields zero or more records; Skipped says what was left out.
func newTrainingWriter(out string, o ExportOptions) (*DialogueWriter, error) {
	tm := newTrainingMiner(o.Style)
	put, closeFn, abort, err := trainingSink(out, o, tm)
	if err != nil {
		return nil, err
	}
	w := &DialogueWriter{close: closeFn, abort: abort}
	w.write = func(d *Dialogue) error {
		n, err := put(d)
		w.samples += n
		return err
	}
	w.report = func() TrainingReport {
		return TrainingReport{Skipped: maps.Clone(tm.skipped), WithFailure: tm.withFailure, Paired: tm.paired}
	}
	return w, nil
}

// TrainingReport says what a training export left out and, for pairs, how
// many dialogues with a failed attempt yielded one.
type TrainingReport struct {
	Skipped     map[string]int `json:"skipped,omitempty"`
	WithFailure int            `json:"with_failure"`
	Paired      int            `json:"paired"`
}

// Training is the report of a training layout's writer (zero otherwise).
func (w *DialogueWriter) Training() TrainingReport {
	if w.report == nil {
		return TrainingReport{}
	}
	return w.report()
}
