package manifest

import (
	"testing"

	"github.com/podvisor/podvisor/internal/inotify"
	"golang.org/x/sys/unix"
)

func TestTranslate(t *testing.T) {
	entry := func(name string, mask uint32) inotify.Event {
		return inotify.Event{Op: inotify.Entry, Name: name, Mask: mask}
	}
	tests := []struct {
		name string
		ev   inotify.Event
		want watchEvent
		ok   bool
	}{
		{"overflow", inotify.Event{Op: inotify.Overflow}, watchEvent{overflow: true}, true},
		{"close-write", entry("web.yaml", unix.IN_CLOSE_WRITE), watchEvent{name: "web.yaml", kind: evClosed}, true},
		{"moved-to", entry("web.yaml", unix.IN_MOVED_TO), watchEvent{name: "web.yaml", kind: evClosed}, true},
		{"moved-from", entry("web.yaml", unix.IN_MOVED_FROM), watchEvent{name: "web.yaml", kind: evRemove}, true},
		{"delete", entry("web.yaml", unix.IN_DELETE), watchEvent{name: "web.yaml", kind: evRemove}, true},
		{"create", entry("web.yaml", unix.IN_CREATE), watchEvent{name: "web.yaml", kind: evCreate}, true},
		{"create dir", entry("..2025", unix.IN_CREATE|unix.IN_ISDIR), watchEvent{name: "..2025", kind: evCreate}, true},
		{"modify", entry("web.yaml", unix.IN_MODIFY), watchEvent{name: "web.yaml", kind: evModify}, true},
		{"attrib", entry("web.yaml", unix.IN_ATTRIB), watchEvent{name: "web.yaml", kind: evAttrib}, true},
		{"open", entry("web.yaml", unix.IN_OPEN), watchEvent{}, false},
		{"directory changed", inotify.Event{Op: inotify.DirChanged, Mask: unix.IN_DELETE_SELF}, watchEvent{dir: true}, true},
		{"directory watched anew", inotify.Event{Op: inotify.DirWatched}, watchEvent{dir: true, watched: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := translate(tt.ev)
			if got != tt.want || ok != tt.ok {
				t.Errorf("translate = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
