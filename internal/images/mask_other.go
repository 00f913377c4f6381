//go:build !linux

package images

// archiveEvents is unused off Linux, where inotify.Watch fails.
const archiveEvents = 0
