package manifest

import (
	"errors"
	"testing"
	"time"

	"github.com/podvisor/podvisor/manifest/podfile"
)

// FuzzParseFile feeds arbitrary bytes to the decoder (podfile). It lives
// here, beside its seed corpus, so that `make fuzz` keeps its path. The seed corpus in
// testdata/fuzz/FuzzParseFile runs with every `go test`; `make fuzz` runs
// the fuzzer for a bounded time. Besides not panicking, parsing must be
// deterministic and every result well formed.
func FuzzParseFile(f *testing.F) {
	f.Add([]byte(basePod))
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opts := range []ParseOptions{{}, {UnknownFields: UnknownFieldsWarn}} {
			r := podfile.ParseDocuments("/m/f.yaml", data, node, now, opts)
			pods, errs := r.Flatten()
			for _, p := range pods {
				if p.Pod == nil || !uidRE.MatchString(p.Hash) || string(p.Pod.UID) != p.Hash || p.Path != "/m/f.yaml" {
					t.Fatalf("malformed pod %+v", p)
				}
			}
			for _, e := range errs {
				if e.Path != "/m/f.yaml" || e.Reason == "" || e.Line < 0 || !errors.Is(e, ErrInvalid) {
					t.Fatalf("malformed error %#v", e)
				}
			}
			for _, d := range r.Docs {
				if len(d.Errors) > 0 && (len(d.Pods) > 0 || len(d.Objects) > 0) {
					t.Fatalf("document %d is invalid but has content", d.Index)
				}
				for _, o := range d.Objects {
					if o.Key == "" || (o.ConfigMap == nil) == (o.Secret == nil) {
						t.Fatalf("malformed object %+v", o)
					}
				}
			}
			again, errs2 := podfile.ParseDocuments("/m/f.yaml", data, node, now, opts).Flatten()
			if len(again) != len(pods) || len(errs2) != len(errs) {
				t.Fatalf("not deterministic: %d/%d pods, %d/%d errors", len(pods), len(again), len(errs), len(errs2))
			}
			for i := range pods {
				if pods[i].Hash != again[i].Hash {
					t.Fatalf("UID not deterministic")
				}
			}
		}
	})
}
