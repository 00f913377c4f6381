package supervise

import "testing"

// TestCheckLabels: container labels that become paths are refused before
// adoption uses them when they could name anything outside podvisor's
// dirs.
func TestCheckLabels(t *testing.T) {
	good := func() map[string]string {
		return map[string]string{
			LabelPodUID: "0f1e2d3c4b5a69788796a5b4c3d2e1f0", LabelSandboxID: "9a8b7c6d5e4f",
			LabelPodNamespace: "kube-system", LabelPodName: "etcd-node1.example", LabelContainer: "etcd",
		}
	}
	if err := checkLabels(good()); err != nil {
		t.Fatalf("good labels refused: %v", err)
	}
	uidOnly := map[string]string{LabelPodUID: "u1"}
	if err := checkLabels(uidOnly); err != nil {
		t.Errorf("labels with only a UID refused: %v", err)
	}
	for _, tc := range []struct{ key, value string }{
		{LabelPodUID, "../../etc"},
		{LabelPodUID, ""},
		{LabelPodUID, ".."},
		{LabelPodUID, "a/b"},
		{LabelPodUID, ".hidden"},
		{LabelPodUID, "a..b"},
		{LabelSandboxID, "../../../tmp/x"},
		{LabelSandboxID, "/abs"},
		{LabelSandboxID, ""},
		{LabelPodNamespace, "../x"},
		{LabelPodNamespace, "Kube_System"},
		{LabelPodName, "../../x"},
		{LabelPodName, "a/b"},
		{LabelContainer, "../c"},
		{LabelContainer, "c.d"},
	} {
		l := good()
		l[tc.key] = tc.value
		if err := checkLabels(l); err == nil {
			t.Errorf("%s=%q accepted", tc.key, tc.value)
		}
	}
}
