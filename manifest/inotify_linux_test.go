package manifest

import (
	"log/slog"
	"testing"

	"golang.org/x/sys/unix"
)

func TestWatcherTranslate(t *testing.T) {
	const dirWd, parentWd = 5, 6
	tests := []struct {
		name string
		wd   int
		mask uint32
		file string
		want watchEvent
		ok   bool
	}{
		{"overflow", -1, unix.IN_Q_OVERFLOW, "", watchEvent{overflow: true}, true},
		{"close-write", dirWd, unix.IN_CLOSE_WRITE, "web.yaml", watchEvent{name: "web.yaml", kind: evClosed}, true},
		{"moved-to", dirWd, unix.IN_MOVED_TO, "web.yaml", watchEvent{name: "web.yaml", kind: evClosed}, true},
		{"moved-from", dirWd, unix.IN_MOVED_FROM, "web.yaml", watchEvent{name: "web.yaml", kind: evRemove}, true},
		{"delete", dirWd, unix.IN_DELETE, "web.yaml", watchEvent{name: "web.yaml", kind: evRemove}, true},
		{"create", dirWd, unix.IN_CREATE, "web.yaml", watchEvent{name: "web.yaml", kind: evCreate}, true},
		{"create dir", dirWd, unix.IN_CREATE | unix.IN_ISDIR, "..2025", watchEvent{name: "..2025", kind: evCreate}, true},
		{"modify", dirWd, unix.IN_MODIFY, "web.yaml", watchEvent{name: "web.yaml", kind: evModify}, true},
		{"attrib", dirWd, unix.IN_ATTRIB, "web.yaml", watchEvent{name: "web.yaml", kind: evAttrib}, true},
		{"directory chmod", dirWd, unix.IN_ATTRIB | unix.IN_ISDIR, "", watchEvent{dir: true}, true},
		{"directory deleted", dirWd, unix.IN_DELETE_SELF, "", watchEvent{dir: true}, true},
		{"directory moved", dirWd, unix.IN_MOVE_SELF, "", watchEvent{dir: true}, true},
		{"directory swapped in the parent", parentWd, unix.IN_MOVED_TO, "manifests", watchEvent{dir: true}, true},
		{"directory created in the parent", parentWd, unix.IN_CREATE | unix.IN_ISDIR, "manifests", watchEvent{dir: true}, true},
		{"another entry of the parent", parentWd, unix.IN_CREATE, "other", watchEvent{}, false},
		{"a stale watch", 3, unix.IN_CLOSE_WRITE, "web.yaml", watchEvent{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &watcher{dirWd: dirWd, parentWd: parentWd, base: "manifests", log: slog.New(slog.DiscardHandler)}
			got, ok := w.translate(tt.wd, tt.mask, tt.file)
			if got != tt.want || ok != tt.ok {
				t.Errorf("translate = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}

	w := &watcher{dirWd: dirWd, parentWd: parentWd, base: "manifests"}
	if ev, ok := w.translate(dirWd, unix.IN_IGNORED, ""); !ok || !ev.dir || w.dirWd != -1 {
		t.Errorf("IN_IGNORED: %+v %v, dirWd %d; want a directory event and the watch forgotten", ev, ok, w.dirWd)
	}
}
