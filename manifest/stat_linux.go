//go:build linux

package manifest

import (
	"io/fs"
	"syscall"
)

// sigOf identifies a file's content without reading it: a writer changes at
// least one of these.
func sigOf(fi fs.FileInfo) fileSig {
	sig := fileSig{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		sig.dev, sig.ino = uint64(st.Dev), uint64(st.Ino)
		sig.ctime = int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec)
	}
	return sig
}

// ownerOf returns the uid that owns the file and its link count.
func ownerOf(fi fs.FileInfo) (uid int, nlink uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), uint64(st.Nlink), true
}
