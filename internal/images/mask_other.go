//go:build !linux

package images

import "os"

// archiveEvents is unused off Linux, where inotify.Watch fails.
const archiveEvents = 0

// versionOf is the version of an archive with info fi: its size and
// modification time.
func versionOf(fi os.FileInfo) version { return version{size: fi.Size(), mtime: fi.ModTime()} }
