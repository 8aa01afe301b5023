package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// ItemStats returns the statistics recorder of the item a per-item stage is
// computing, for figures that are not visible in the item's outputs (items
// dropped, attempts made): what a stage adds to it is stored with the item's
// cached outputs and replayed into the stage's statistics whenever the engine
// serves the item from the cache, so a re-run reports the same figures as a
// fresh run. Figures derived from the outputs belong in Stage.Observe instead.
//
// The recorder's Add and Set reach the stage's statistics (Services.Stats)
// once the item has succeeded, in input order; those of failed attempts
// (retried or not) are dropped, and so are those of items that fail
// permanently. AddUsage goes straight to the stage's statistics, for every
// attempt, and is not replayed: cached items cost nothing.
//
// Outside the engine (a stage's Each called directly, as in unit tests) ctx
// carries no recorder and ItemStats returns fallback, typically the stage's
// Services.Stats; a nil *Stats ignores everything recorded.
func ItemStats(ctx context.Context, fallback *Stats) *Stats {
	if s, ok := ctx.Value(itemStatsKey{}).(*Stats); ok {
		return s
	}
	return fallback
}

type itemStatsKey struct{}

// itemCtx carries an item's recorder. It lives in the item's slot, so
// passing it to Each allocates nothing; it embeds the attempt's context, so
// contexts derived from it find the parent's cancellation directly.
type itemCtx struct {
	context.Context
	stats *Stats
}

func (c *itemCtx) Value(key any) any {
	if key == (itemStatsKey{}) {
		return c.stats
	}
	return c.Context.Value(key)
}

// statsPrefix starts the optional last line of a cached item value, which
// holds the item's recorded statistics. Item lines are JSON objects and
// start with '{', so it cannot be mistaken for one; values stored before
// the line existed simply have none.
const statsPrefix = "#stats "

// itemDelta is the stored form of an item recorder's figures.
type itemDelta struct {
	Add     map[string]float64 `json:"add,omitempty"`
	Set     map[string]float64 `json:"set,omitempty"`
	Rejects []Rejection        `json:"rejects,omitempty"`
}

// reset empties an item recorder for a new attempt, keeping its maps.
func (s *Stats) reset(stage *Stats) {
	s.mu.Lock()
	s.item, s.stage = true, stage
	clear(s.vals)
	clear(s.sets)
	s.rejects = s.rejects[:0]
	s.mu.Unlock()
}

// appendDelta appends the recorder's statistics line to dst, or nothing when
// the attempt recorded nothing; its rejections are stamped with the stage
// and item.
func (s *Stats) appendDelta(dst []byte, stage, itemID string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.vals) == 0 && len(s.sets) == 0 && len(s.rejects) == 0 {
		return dst, nil
	}
	for i := range s.rejects {
		s.rejects[i].Stage, s.rejects[i].ItemID = stage, itemID
	}
	b, err := json.Marshal(itemDelta{Add: s.vals, Set: s.sets, Rejects: s.rejects}) // maps: sorted keys
	if err != nil {
		return dst, fmt.Errorf("encode item stats: %w", err)
	}
	dst = append(dst, statsPrefix...)
	dst = append(dst, b...)
	return append(dst, '\n'), nil
}

// splitDelta splits the lines of a cached valOK value into its item lines
// and its statistics line (without prefix and newline; nil when absent).
func splitDelta(lines []byte) (items, delta []byte) {
	if len(lines) == 0 || lines[len(lines)-1] != '\n' {
		return lines, nil
	}
	i := bytes.LastIndexByte(lines[:len(lines)-1], '\n') + 1
	if !bytes.HasPrefix(lines[i:], []byte(statsPrefix)) {
		return lines, nil
	}
	return lines[:i], lines[i+len(statsPrefix) : len(lines)-1]
}

// replayDelta applies a stored statistics line to the stage's statistics:
// adds, then sets. It returns the item's rejections.
func replayDelta(stats *Stats, delta []byte) ([]Rejection, error) {
	var d itemDelta
	if err := json.Unmarshal(delta, &d); err != nil {
		return nil, fmt.Errorf("decode item stats: %w", err)
	}
	for k, v := range d.Add {
		stats.Add(k, v)
	}
	for k, v := range d.Set {
		stats.Set(k, v)
	}
	return d.Rejects, nil
}
