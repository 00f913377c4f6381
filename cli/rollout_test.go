package cli

import (
	"errors"
	"testing"

	"github.com/podvisor/podvisor/api"
)

// podvisor's refusals of an undo read as refusals, a broader revision's
// privileges one a line; other failures as the API says them.
func TestUndoFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"TLS port", &api.APIError{Code: 403, Reason: "Forbidden", Message: "rollout undo is refused on the remote API: undo changes what the node runs, and only root may do that, on the node's local socket (podvisor rollout undo)"},
			`error: rollout undo of pod "default/web" refused: rollout undo is refused on the remote API: undo changes what the node runs, and only root may do that, on the node's local socket (podvisor rollout undo)`},
		{"broader privileges", &api.APIError{Code: 422, Reason: "Invalid", Message: "pod default/web-n: revision 1 has privileges the manifest (revision 3) does not grant: volume etc: hostPath /etc; container app: privileged; only root grants privileges, by editing the manifest"},
			`error: rollout undo of pod "default/web" refused: pod default/web-n: revision 1 has privileges the manifest (revision 3) does not grant:
  - volume etc: hostPath /etc
  - container app: privileged
only root grants privileges, by editing the manifest`},
		{"revision not kept", &api.APIError{Code: 422, Reason: "Invalid", Message: "pod default/web-n: revision 99 is not kept (kept: 1, 2)"},
			"error: pod default/web-n: revision 99 is not kept (kept: 1, 2)"},
		{"not found", &api.APIError{Code: 404, Reason: "NotFound", Message: `pods "web" not found`}, `pods "web" not found`},
		{"no daemon", errors.New("dial: no such file"), "dial: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := undoFailure("default/web", tc.err)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
			var ee *ExitError
			if _, isAPI := tc.err.(*api.APIError); isAPI && (!errors.As(err, &ee) || ee.Code != 1) {
				t.Errorf("%v: not exit 1", err)
			}
		})
	}
}
