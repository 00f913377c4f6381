package api

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fixedObjects is an ObjectSource with a fixed answer.
type fixedObjects struct{ list ObjectList }

func (f fixedObjects) Objects() ObjectList { return f.list }

// TestObjectsEndpoint: GET /objects lists the objects with their file,
// errors and users; ?kind= narrows; a Secret's values (data, stringData,
// the last-applied annotation) are nowhere in the bytes sent, its keys and
// sizes are, and the source's Secret is left untouched.
func TestObjectsEndpoint(t *testing.T) {
	const value = "pw-0a1b2c3d4e"
	secret := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{lastApplied: `{"stringData":{"password":"` + value + `"}}`, "note": "kept"}},
		Type:       v1.SecretTypeOpaque,
		Data:       map[string][]byte{"password": []byte(value)},
		StringData: map[string]string{"user": value + "-user"},
	}
	src := fixedObjects{ObjectList{
		Items: []Object{
			{Kind: "ConfigMap", Namespace: "default", Name: "conf", File: "/m/c.yaml", Line: 4,
				ConfigMap: &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf", Namespace: "default"}, Data: map[string]string{"k": "visible"}},
				UsedBy:    []ObjectReference{{Pod: "default/web-n", Kind: "ConfigMap", Name: "conf", Field: "spec.volumes[0].configMap.name", Exists: true}}},
			{Kind: "Secret", Namespace: "default", Name: "creds", File: "/m/c.yaml", Line: 9, Error: "/m/c.yaml:12: data[x]: bad",
				Errors: []string{"/m/c.yaml:12: data[x]: bad"}, Secret: secret},
		},
		Missing: []ObjectReference{{Pod: "default/web-n", Kind: "Secret", Name: "gone", Field: "spec.imagePullSecrets[0].name", ImagePull: true}},
	}}
	socket := filepath.Join(t.TempDir(), "s.sock")
	serveOpts(t, Options{Socket: socket, Store: &podStore{}, Objects: src})
	c := NewClient(socket)

	resp, err := c.get(t.Context(), "/objects", nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(raw, []byte(value)) {
		t.Fatalf("a Secret value left the daemon:\n%s", raw)
	}
	all, err := c.Objects(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != 2 || all.Items[0].ConfigMap.Data["k"] != "visible" || len(all.Items[0].UsedBy) != 1 || len(all.Missing) != 1 {
		t.Fatalf("objects %+v", all)
	}
	s := all.Items[1]
	if s.Secret == nil || len(s.Secret.Data) != 2 || s.Secret.Data["password"] != nil || s.DataSizes["password"] != len(value) ||
		s.DataSizes["user"] != len(value)+5 || s.Secret.StringData != nil || s.Secret.Annotations[lastApplied] != RedactedValue ||
		s.Secret.Annotations["note"] != "kept" || s.Secret.Labels["app"] != "web" || s.Error == "" || s.File != "/m/c.yaml" {
		t.Errorf("secret %+v (sizes %v)", s.Secret, s.DataSizes)
	}
	if string(secret.Data["password"]) != value || secret.Annotations[lastApplied] == RedactedValue {
		t.Errorf("the source's Secret was modified")
	}

	cms, err := c.Objects(t.Context(), "ConfigMap")
	if err != nil || len(cms.Items) != 1 || cms.Items[0].Name != "conf" || len(cms.Missing) != 0 {
		t.Errorf("kind=ConfigMap: %+v, %v", cms, err)
	}
	var apiErr *APIError
	if _, err := c.Objects(t.Context(), "Pod"); !errors.As(err, &apiErr) || apiErr.Code != http.StatusBadRequest {
		t.Errorf("kind=Pod: %v, want a 400", err)
	}
	none := filepath.Join(t.TempDir(), "n.sock")
	serveOpts(t, Options{Socket: none, Store: &podStore{}})
	if _, err := NewClient(none).Objects(t.Context(), ""); !errors.As(err, &apiErr) || apiErr.Code != http.StatusNotImplemented {
		t.Errorf("without a source: %v, want a 501", err)
	}
}
