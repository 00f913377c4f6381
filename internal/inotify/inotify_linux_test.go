package inotify

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

func record(wd int32, mask uint32, name string, pad int) []byte {
	b := make([]byte, unix.SizeofInotifyEvent+len(name)+pad)
	binary.NativeEndian.PutUint32(b[0:], uint32(wd))
	binary.NativeEndian.PutUint32(b[4:], mask)
	binary.NativeEndian.PutUint32(b[12:], uint32(len(name)+pad))
	copy(b[unix.SizeofInotifyEvent:], name)
	return b
}

func TestEach(t *testing.T) {
	var buf []byte
	buf = append(buf, record(1, unix.IN_CLOSE_WRITE, "a.yaml", 2)...)
	buf = append(buf, record(2, unix.IN_DELETE_SELF, "", 0)...)
	full := len(buf)
	buf = append(buf, record(1, unix.IN_MOVED_TO, "cut-off.yaml", 4)...)
	type ev struct {
		wd   int
		mask uint32
		name string
	}
	var got []ev
	Each(buf, len(buf)-3, func(wd int, mask uint32, name string) { got = append(got, ev{wd, mask, name}) })
	want := []ev{{1, unix.IN_CLOSE_WRITE, "a.yaml"}, {2, unix.IN_DELETE_SELF, ""}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("events = %+v, want %+v (first %d bytes complete)", got, want, full)
	}
}
