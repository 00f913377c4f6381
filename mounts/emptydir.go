package mounts

// EmptyDirPath is the host directory of the emptyDir volume name of the
// pod whose directory is dir.
func EmptyDirPath(dir, name string) string { return emptyDirPath(dir, name) }
