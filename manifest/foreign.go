package manifest

import (
	"encoding/json"
	"strings"
)

// foreignReason is the skip reason of a JSON file that foreignJSON
// rejects.
const foreignReason = "JSON that is not a Kubernetes object (no apiVersion, kind, metadata or spec)"

// foreignJSON reports whether path is a .json file that is valid JSON but
// plainly no Kubernetes object: not an object, or an object with none of
// apiVersion, kind, metadata, spec and items (a dashboard, a package.json
// beside the manifests). Such a file holds no pod and is skipped at
// Debug. kubelet's file source would report it as an error; podvisor
// still does for JSON that does not parse, and for an object that has any
// of those fields, since that may be a manifest with a mistake.
func foreignJSON(path string, data []byte) bool {
	if !strings.HasSuffix(path, ".json") {
		return false
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return false
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return true
	}
	for _, k := range []string{"apiVersion", "kind", "metadata", "spec", "items"} {
		if _, ok := obj[k]; ok {
			return false
		}
	}
	return true
}
