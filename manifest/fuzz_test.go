package manifest

import (
	"errors"
	"testing"
	"time"
)

// FuzzParseFile feeds arbitrary bytes to the decoder. The seed corpus in
// testdata/fuzz/FuzzParseFile runs with every `go test`; `make fuzz` runs
// the fuzzer for a bounded time. Besides not panicking, parsing must be
// deterministic and every result well formed.
func FuzzParseFile(f *testing.F) {
	f.Add([]byte(basePod))
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opts := range []ParseOptions{{}, {UnknownFields: UnknownFieldsWarn}} {
			r := parseDocs("/m/f.yaml", data, node, now, opts)
			pods, errs := flatten(r)
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
			for _, d := range r.docs {
				if len(d.errs) > 0 && (len(d.pods) > 0 || len(d.objs) > 0) {
					t.Fatalf("document %d is invalid but has content", d.index)
				}
				for _, o := range d.objs {
					if o.key == "" || (o.cm == nil) == (o.secret == nil) {
						t.Fatalf("malformed object %+v", o)
					}
				}
			}
			again, errs2 := flatten(parseDocs("/m/f.yaml", data, node, now, opts))
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
