//go:build !linux

package manifest

import "io/fs"

func sigOf(fi fs.FileInfo) fileSig {
	return fileSig{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

func ownerOf(fs.FileInfo) (uid int, nlink uint64, ok bool) { return 0, 0, false }
