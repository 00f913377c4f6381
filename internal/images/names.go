package images

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/distribution/reference"
)

// Normalize is an image reference as containerd names the image: docker's
// normalization ("busybox" → "docker.io/library/busybox:latest"), the names
// Import gives and pods' images are looked up by.
func Normalize(image string) (string, error) {
	named, err := reference.ParseDockerRef(image)
	if err != nil {
		return "", fmt.Errorf("invalid image name %q: %w", image, err)
	}
	return named.String(), nil
}

// RefTranslator returns the function naming the images of the archive at
// archivePath from their org.opencontainers.image.ref.name as docker does:
// "busybox" and "busybox:latest" become "docker.io/library/busybox:latest".
// A bare tag (the OCI convention: "latest" or a version such as "1.36") is
// a tag of the repository named after the archive file ("busybox.tar" →
// docker.io/library/busybox:1.36). A name that is no reference becomes "".
func RefTranslator(archivePath string) func(string) string {
	repo := strings.TrimSuffix(filepath.Base(archivePath), ".tar")
	return func(ref string) string {
		if looksLikeTag(ref) && repo != "" {
			if _, err := reference.ParseDockerRef(repo); err == nil {
				ref = repo + ":" + ref
			}
		}
		named, err := reference.ParseDockerRef(ref)
		if err != nil {
			return ""
		}
		return named.String()
	}
}

// looksLikeTag tells a bare OCI ref.name tag ("latest", "v1.2", "3.5.9")
// from a bare repository name ("busybox").
func looksLikeTag(ref string) bool {
	if ref == "" || strings.ContainsAny(ref, "/:@") {
		return false
	}
	if ref == "latest" {
		return true
	}
	c := ref[0]
	return c >= '0' && c <= '9' || (c == 'v' && len(ref) > 1 && ref[1] >= '0' && ref[1] <= '9')
}

// isArchive reports whether a directory entry's name is an image archive.
func isArchive(name string) bool {
	return strings.HasSuffix(name, ".tar") && !strings.HasPrefix(name, ".")
}
