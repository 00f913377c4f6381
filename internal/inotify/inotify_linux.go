package inotify

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Each calls f for every complete event in buf[:n], with the watch
// descriptor, the mask and the name (without its NUL padding; empty for
// events about the watched directory itself). A record cut off at the end
// of buf is ignored.
func Each(buf []byte, n int, f func(wd int, mask uint32, name string)) {
	for off := 0; off+unix.SizeofInotifyEvent <= n; {
		raw := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		end := off + unix.SizeofInotifyEvent + int(raw.Len)
		if end > n {
			return
		}
		name := buf[off+unix.SizeofInotifyEvent : end]
		for len(name) > 0 && name[len(name)-1] == 0 {
			name = name[:len(name)-1]
		}
		f(int(raw.Wd), raw.Mask, string(name))
		off = end
	}
}
