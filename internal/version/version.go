package version

// Version is podvisor's release version.
var Version = "v0.1.0-dev"
