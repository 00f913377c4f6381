//go:build linux

package trust

import (
	"io/fs"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// statInfo is an fs.FileInfo of a unix.Stat_t taken on a descriptor, so
// Reasons judges what fstat saw.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string       { return filepath.Base(s.name) }
func (s statInfo) Size() int64        { return s.st.Size }
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s statInfo) IsDir() bool        { return s.st.Mode&unix.S_IFMT == unix.S_IFDIR }
func (s statInfo) Sys() any {
	return &syscall.Stat_t{Uid: s.st.Uid, Gid: s.st.Gid, Mode: s.st.Mode, Ino: s.st.Ino, Dev: s.st.Dev}
}

func (s statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	}
	if s.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
