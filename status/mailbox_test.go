package status

import "testing"

// TestMailbox: changes come out lowest version first, one per key; a
// fold that cancels leaves nothing; beyond the limit the oldest goes.
func TestMailbox(t *testing.T) {
	type ch struct {
		key string
		v   uint64
	}
	last := func(_ ch, _ bool, c ch) (ch, bool) { return c, true }
	m := newMailbox[string](nil, func(c ch) uint64 { return c.v }, 3)
	for _, c := range []ch{{"a", 1}, {"b", 2}, {"a", 3}, {"c", 4}, {"d", 5}} {
		m.put(c.key, c, last)
	}
	// a@1 became a@3; with four keys over a limit of three, b@2 (the
	// oldest) was dropped.
	var got []ch
	for {
		c, ok := m.take()
		if !ok {
			break
		}
		got = append(got, c)
	}
	want := []ch{{"a", 3}, {"c", 4}, {"d", 5}}
	if len(got) != len(want) {
		t.Fatalf("took %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("took %v, want %v", got, want)
		}
	}
	m.put("x", ch{"x", 6}, last)
	m.put("x", ch{"x", 7}, func(ch, bool, ch) (ch, bool) { return ch{}, false })
	if c, ok := m.take(); ok {
		t.Errorf("took %v after the two changes cancelled out", c)
	}
}
