package leak

import (
	"math/bits"
	"slices"
	"unsafe"

	"github.com/codefeedback/codefeedback/schema"
)

// msgMemo is one worker's memo of what scanMessage yields for messages
// that recur across dialogues: a system prompt, a templated request or
// feedback turn, an execution result, a reply given to many requests.
// The third time a message is met its yield is kept (memoAdmit); from
// the fourth on it is replayed (copied, its indexes rebased) instead of
// tokenized, cut and hashed again. What scanMessage yields depends on the message alone
// (its role, text and executed code) and on the auditor, so a replay
// gives the check exactly what a scan would (TestMemoChangesNothing
// compares whole reports).
//
// The memo is bounded: when its entries would hold more than its limit,
// the entries not replayed since the last such sweep are dropped (all of
// them if that frees less than half), and the messages met fewer times
// are counted in a table of hashes, a newer one taking an older one's
// slot.
//
// Where nothing recurs, hashing each whole message only to find it new
// was most of the memo's cost: a message is first looked up by a hash of
// a few of its bytes (sampleHash, in met), and hashed whole only when
// that hash was met before.
type msgMemo struct {
	owner *Auditor
	// met holds, at slot s>>memoSeenShift, the sampled hash s of the
	// last message met there: a message whose sampled hash is not in it
	// is new, or was crowded out (it is then counted again from one).
	// It keeps the hash's low 32 bits (the slot is its top 16): half the
	// bytes of the one table every new message touches, and a false
	// match (one in 2^32) only costs a whole-message hash.
	met []uint32
	// seen holds hashes of messages met but not kept, at slot hash>>memoSeenShift
	// (a collision only keeps a message early, or late).
	seen    []uint64
	seenN   []uint8               // sightings of seen's message
	entries map[uint64]*memoEntry // by hash; the entry's key is checked
	bytes   int
	limit   int // most bytes
	replays int // messages replayed, over the memo's life
	sweeps  int
}

// memoKey is what scanMessage reads of a message.
type memoKey struct {
	role, content, exec string
}

// memoEntry is scanMessage's yield for one message, its indexes relative
// to the message's first line, token, statement or k-gram.
type memoEntry struct {
	key        memoKey
	lh, wh     []uint64
	blockStart []int // relative to the message's first line in lh
	words      []span
	code       bool // the message has a ctMsg (enough code tokens)
	ctoks      []ctok
	sts        []stmt       // token offsets relative to the message, as scanned
	lks        []literalKey // same
	body, bWH  []uint64
	bPos       []int
	fp         [nStreams][]fpCand // m unset: the message's ctMsg
	grams      []gramCand         // m unset: the message's msgRange
	// asked are askedBy's statement documents for this user turn, once
	// askedSet.
	asked    []int
	askedSet bool
	size     int // estimated bytes
	hits     int // replays since the last sweep
}

const (
	// minMemoBytes: shorter messages cost less to scan than to look up.
	minMemoBytes = 64
	// memoBytes bounds the memos of all of a run's workers together
	// (entries, estimated): each has its share, and at least
	// minMemoShare, so a run on many cores holds not much more than on
	// two.
	memoBytes    = 64 << 20
	minMemoShare = 4 << 20
	// memoAdmit is the sighting at which a message is kept: a message
	// met only twice (a dialogue published twice) would not repay the
	// copy, and would crowd out the ones that recur all along.
	memoAdmit = 3
	// memoSeenShift sets the table of messages met once: 1<<(64-shift)
	// slots (65,536, 512 KiB).
	memoSeenShift = 48
)

// newMsgMemo returns a memo for one of workers workers.
func newMsgMemo(workers int) *msgMemo {
	return &msgMemo{limit: max(memoBytes/max(workers, 1), minMemoShare), met: make([]uint32, 1<<(64-memoSeenShift)),
		seen: make([]uint64, 1<<(64-memoSeenShift)), seenN: make([]uint8, 1<<(64-memoSeenShift)), entries: map[uint64]*memoEntry{}}
}

func (mm *msgMemo) reset() {
	clear(mm.met)
	clear(mm.seen)
	clear(mm.seenN)
	clear(mm.entries)
	mm.bytes = 0
}

// memoHash hashes what scanMessage reads of a message (never 0, the
// empty slot).
func memoHash(k *memoKey) uint64 {
	h := hashString(k.content) ^ hashString(k.role)*0x9E3779B97F4A7C15
	if k.exec != "" {
		h ^= hashString(k.exec) * 0xC2B2AE3D27D4EB4F
	}
	return h | 1
}

// sampleHash hashes the lengths and roles of what scanMessage reads of a
// message and six words of its text (at least minMemoBytes long): its
// first and last 16 bytes and 16 in the middle (never 0). Messages that
// differ only elsewhere share it: they are then hashed whole (memoHash),
// as every message was.
//
// Each word is multiplied by its own odd constant and the products
// combined before one finaliser: the six multiplies run side by side,
// where a finaliser per word made one chain of them.
func sampleHash(k *memoKey) uint64 {
	c, n := k.content, len(k.content)
	var r uint64
	switch k.role {
	case schema.RoleUser:
		r = 0x452821E638D01377
	case schema.RoleAssistant:
		r = 0xBE5466CF34E90C6C
	default:
		r = hashString(k.role)
	}
	h := r ^ uint64(n)*0x9E3779B97F4A7C15 ^ uint64(len(k.exec))*0xC2B2AE3D27D4EB4F
	h ^= load64(c, 0)*0xff51afd7ed558ccd + load64(c, 8)*0xc4ceb9fe1a85ec53 +
		bits.RotateLeft64(load64(c, n/2-8)*0x87c37b91114253d5, 21) + bits.RotateLeft64(load64(c, n/2)*0x4cf5ad432745937f, 42) +
		bits.RotateLeft64(load64(c, n-16)*0x9E3779B97F4A7C15, 13) + bits.RotateLeft64(load64(c, n-8)*0xC2B2AE3D27D4EB4F, 29)
	return fmix64(h) | 1
}

// scan is a.scanMessage(s, i, m), replayed from the memo when m was met
// memoAdmit times before.
func (mm *msgMemo) scan(a *Auditor, s *scratch, i int, m *schema.Message) {
	s.entryOf = append(s.entryOf, nil)
	if mm.owner != a {
		// A scratch may serve several auditors (benchmarks): the yield
		// depends on the auditor's options and indexes.
		mm.reset()
		mm.owner = a
	}
	if len(m.Content) < minMemoBytes {
		a.scanMessage(s, i, m)
		return
	}
	key := memoKey{role: m.Role, content: m.Content}
	if m.Exec != nil {
		key.exec = m.Exec.Code
	}
	if sh := sampleHash(&key); mm.met[sh>>memoSeenShift] != uint32(sh) {
		mm.met[sh>>memoSeenShift] = uint32(sh)
		a.scanMessage(s, i, m)
		return
	}
	h := memoHash(&key)
	if e := mm.entries[h]; e != nil {
		if e.key == key {
			e.hits++
			mm.replays++
			s.entryOf[i] = e
			e.replay(s, i, m)
		} else {
			a.scanMessage(s, i, m)
		}
		return
	}
	if slot := h >> memoSeenShift; mm.seen[slot] != h || mm.seenN[slot] < memoAdmit-1 {
		if mm.seen[slot] != h {
			// The sighting met holds is the first.
			mm.seen[slot], mm.seenN[slot] = h, 1
		}
		mm.seenN[slot]++
		a.scanMessage(s, i, m)
		return
	}
	// The memoAdmit-th sighting: scan, and keep the yield.
	at := s.mark()
	a.scanMessage(s, i, m)
	e := s.since(at)
	e.key = key
	e.size = e.bytes() + len(key.content) + len(key.exec)
	if mm.bytes+e.size > mm.limit {
		mm.sweep()
	}
	mm.entries[h] = e
	mm.bytes += e.size
	s.entryOf[i] = e
}

// scratchMark is the lengths of the scratch's per-dialogue buffers.
type scratchMark struct {
	lh, wh, bs, toks, ctoks, ctMsgs, sts, lks, body, grams int
	fp                                                     [nStreams]int
}

func (s *scratch) mark() scratchMark {
	m := scratchMark{lh: len(s.lh), wh: len(s.wh), bs: len(s.blockStart), toks: len(s.toks), ctoks: len(s.ctoks),
		ctMsgs: len(s.ctMsgs), sts: len(s.sts), lks: len(s.lks), body: len(s.stBody), grams: len(s.gramCand)}
	for st := range nStreams {
		m.fp[st] = len(s.fpCand[st])
	}
	return m
}

// since copies what one scanMessage appended after at.
func (s *scratch) since(at scratchMark) *memoEntry {
	e := &memoEntry{
		lh: slices.Clone(s.lh[at.lh:]), wh: slices.Clone(s.wh[at.wh:]),
		blockStart: slices.Clone(s.blockStart[at.bs:]),
		words:      slices.Clone(s.toks[at.toks:]),
		code:       len(s.ctMsgs) > at.ctMsgs,
		ctoks:      slices.Clone(s.ctoks[at.ctoks:]),
		sts:        slices.Clone(s.sts[at.sts:]), lks: slices.Clone(s.lks[at.lks:]),
		body: slices.Clone(s.stBody[at.body:]), bWH: slices.Clone(s.stWH[at.body:]), bPos: slices.Clone(s.stPos[at.body:]),
		grams: slices.Clone(s.gramCand[at.grams:]),
	}
	for k := range e.blockStart {
		e.blockStart[k] -= at.lh
	}
	for st := range nStreams {
		e.fp[st] = slices.Clone(s.fpCand[st][at.fp[st]:])
	}
	return e
}

// sweep drops the entries not replayed since the last sweep, or all of
// them when the others hold more than half the memo's bound.
func (mm *msgMemo) sweep() {
	mm.sweeps++
	for h, e := range mm.entries {
		if e.hits == 0 {
			delete(mm.entries, h)
			mm.bytes -= e.size
		}
		e.hits = 0
	}
	if mm.bytes > mm.limit/2 {
		clear(mm.entries)
		mm.bytes = 0
	}
}

// bytes estimates the entry's size.
func (e *memoEntry) bytes() int {
	n := 8*(len(e.lh)+len(e.wh)+len(e.blockStart)+len(e.body)+len(e.bWH)+len(e.bPos)) +
		int(unsafe.Sizeof(span{}))*len(e.words) + int(unsafe.Sizeof(ctok{}))*len(e.ctoks) +
		int(unsafe.Sizeof(stmt{}))*len(e.sts) + int(unsafe.Sizeof(literalKey{}))*len(e.lks) +
		int(unsafe.Sizeof(gramCand{}))*len(e.grams)
	for st := range nStreams {
		n += int(unsafe.Sizeof(fpCand{})) * len(e.fp[st])
	}
	return n + int(unsafe.Sizeof(memoEntry{}))
}

// replay appends the entry to the scratch as scanMessage would for
// message i.
func (e *memoEntry) replay(s *scratch, i int, m *schema.Message) {
	lh0 := len(s.lh)
	s.lh = append(s.lh, e.lh...)
	s.wh = append(s.wh, e.wh...)
	for _, b := range e.blockStart {
		s.blockStart = append(s.blockStart, lh0+b)
	}
	t0 := len(s.toks)
	s.toks = append(s.toks, e.words...)
	if e.code {
		c0 := len(s.ctoks)
		s.ctoks = append(s.ctoks, e.ctoks...)
		cm := ctMsg{msg: i, t0: c0, t1: len(s.ctoks), s0: len(s.sts), l0: len(s.lks), b0: len(s.stBody)}
		s.sts = append(s.sts, e.sts...)
		s.lks = append(s.lks, e.lks...)
		s.stBody = append(s.stBody, e.body...)
		s.stWH = append(s.stWH, e.bWH...)
		s.stPos = append(s.stPos, e.bPos...)
		cm.s1, cm.l1, cm.b1 = len(s.sts), len(s.lks), len(s.stBody)
		mi := int32(len(s.ctMsgs))
		s.ctMsgs = append(s.ctMsgs, cm)
		for st := range nStreams {
			for _, c := range e.fp[st] {
				c.m = mi
				s.fpCand[st] = append(s.fpCand[st], c)
			}
		}
	}
	mi := int32(len(s.msgs))
	s.msgs = append(s.msgs, msgRange{text: m.Content, msg: i, role: m.Role, tok0: t0, tok1: len(s.toks)})
	for _, c := range e.grams {
		c.m = mi
		s.gramCand = append(s.gramCand, c)
	}
}
