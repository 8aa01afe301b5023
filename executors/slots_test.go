package executors

import "testing"

// Two executors on one host (here in one process; an flock is per open
// file, so processes behave the same) never share slot uids, and a
// released block is reused.
func TestReserveIDsGivesDisjointBlocks(t *testing.T) {
	name := "test-" + t.Name()
	a, err := ReserveIDs(name, 500000, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReserveIDs(name, 500000, 3)
	if err != nil {
		t.Fatal(err)
	}
	if a.Base == b.Base || a.UID(5) == b.UID(5) {
		t.Errorf("got bases %d and %d, want different blocks", a.Base, b.Base)
	}
	if got, want := a.UID(7), a.Base+7; got != want {
		t.Errorf("UID(7): got %d want %d", got, want)
	}
	c, err := ReserveIDs(name, 500000, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReserveIDs(name, 500000, 3); err == nil {
		t.Errorf("a fourth reservation of three blocks succeeded, want an error")
	}
	a.Release()
	d, err := ReserveIDs(name, 500000, 3)
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	if d.Base != a.Base {
		t.Errorf("after Release got base %d, want the freed %d", d.Base, a.Base)
	}
	for _, x := range []*IDBlock{b, c, d} {
		x.Release()
	}
}
