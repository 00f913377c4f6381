package images

// Info is one image the runtime holds, as the local API lists it; the
// runtime fills it and the API serves it (neither imports the other).
type Info struct {
	// Name is the image's reference, such as docker.io/library/busybox:latest.
	Name string
	// Digest is the digest of what the name points at (a manifest or an
	// index): the digest of its repo digest.
	Digest string
	// ID is the digest of the image's config for this platform, crictl's
	// IMAGE ID; empty when its content is missing.
	ID string
	// Size is the bytes of content for this platform (index, manifest,
	// config and compressed layers), the size crictl shows; 0 when its
	// content is missing.
	Size int64
}
