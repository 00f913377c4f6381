package supervise

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The cases of kubelet's TestMakeMounts / TestExpandContainerVolumeMounts
// that concern subPathExpr, with kubelet's messages.
func TestExpandSubPathExprs(t *testing.T) {
	env := []string{"POD_NAME=web-1", "NS=default", "EMPTY=", "UP=..", "ABS=/etc", "POD_NAME=web-2"}
	for _, tc := range []struct {
		expr, want, err string
	}{
		{expr: "$(POD_NAME)", want: "web-2"}, // the last definition wins
		{expr: "logs/$(NS)/$(POD_NAME)", want: "logs/default/web-2"},
		{expr: "plain", want: "plain"},
		{expr: "$$(POD_NAME)", want: "$(POD_NAME)"},
		{expr: "$(NOPE)/$(EMPTY)/$(NOPE)", err: "missing value for EMPTY, NOPE"},
		{expr: "$(ABS)/x", err: "error SubPath `/etc/x` must not be an absolute path"},
		{expr: "a/$(UP)/b", err: "unable to provision SubPath `a/../b`: must not contain '..'"},
	} {
		c := &v1.Container{Name: "a", VolumeMounts: []v1.VolumeMount{
			{Name: "keep", MountPath: "/k", SubPath: "s"},
			{Name: "d", MountPath: "/d", SubPathExpr: tc.expr},
		}}
		got, err := expandSubPathExprs(c, env)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: error %v, want %q", tc.expr, err, tc.err)
			}
			continue
		case err != nil:
			t.Errorf("%q: %v", tc.expr, err)
			continue
		}
		if m := got.VolumeMounts[1]; m.SubPath != tc.want || m.SubPathExpr != "" {
			t.Errorf("%q: subPath %q subPathExpr %q, want %q", tc.expr, m.SubPath, m.SubPathExpr, tc.want)
		}
		if got.VolumeMounts[0].SubPath != "s" || c.VolumeMounts[1].SubPathExpr != tc.expr {
			t.Errorf("%q: other mount changed or the spec modified", tc.expr)
		}
	}
	c := &v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "d", MountPath: "/d"}}}
	if got, err := expandSubPathExprs(c, nil); err != nil || got != c {
		t.Errorf("no subPathExpr: %v %v, want the container itself", got, err)
	}
}
