package daemon

import "testing"

func TestKubeletPort(t *testing.T) {
	for addr, want := range map[string]int32{
		"":                0,
		"127.0.0.1:10250": 10250,
		"[::1]:41234":     41234,
		":0":              0,
		"no-port":         0,
	} {
		if got := kubeletPort(addr); got != want {
			t.Errorf("kubeletPort(%q) = %d, want %d", addr, got, want)
		}
	}
}
