package layout

import "testing"

func TestPaths(t *testing.T) {
	l := Layout{StateDir: "/s", RunDir: "/r", LogDir: "/l"}
	for got, want := range map[string]string{
		l.RecordFile("u1"):           "/s/pods/u1/record.json",
		l.PodFiles("u1"):             "/s/pods/u1/files",
		l.TerminationLog("u1", "c1"): "/s/pods/u1/termination/c1/termination-log",
		l.EventJournal():             "/s/events.jsonl",
		l.CNICache():                 "/s/cni/cache",
		l.ImagesState():              "/s/images/state.json",
		l.CNIData():                  "/s/cni/networks",
		l.NodeNameFile():             "/s/node-name",
		l.LockFile():                 "/s/podvisor.lock",
		l.ContainerdRoot():           "/s/containerd",
		l.ContainerdDir():            "/r/containerd",
		l.SandboxDir("sb"):           "/r/pods/sb",
		l.Socket():                   "/r/podvisor.sock",
		l.ContainerLog("ns", "web", "u1", "c", 2): "/l/ns_web_u1/c/2.log",
		PodCgroup("podvisor", "u1"):               "/podvisor/podu1",
		ContainerCgroup("/a/b", "u1", "c1"):       "/a/b/podu1/c1",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}
