package cni

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/libcni"
)

func TestBuiltinConfList(t *testing.T) {
	b := BuiltinConfList("10.99.0.0/16", "/state/cni/networks")

	list, err := libcni.NetworkConfFromBytes(b)
	if err != nil {
		t.Fatalf("libcni rejects the built-in conflist: %v", err)
	}
	if list.Name != "podvisor" || list.CNIVersion != "1.0.0" || len(list.Plugins) != 2 {
		t.Fatalf("list = %s %s with %d plugins, want podvisor 1.0.0 with 2", list.Name, list.CNIVersion, len(list.Plugins))
	}
	if typ := list.Plugins[1].Network.Type; typ != "portmap" || !list.Plugins[1].Network.Capabilities["portMappings"] {
		t.Errorf("second plugin = %s caps %v, want portmap with portMappings", typ, list.Plugins[1].Network.Capabilities)
	}

	var raw struct {
		Plugins []struct {
			Type        string `json:"type"`
			Bridge      string `json:"bridge"`
			IsGateway   bool   `json:"isGateway"`
			IPMasq      bool   `json:"ipMasq"`
			HairpinMode bool   `json:"hairpinMode"`
			IPAM        struct {
				Type    string              `json:"type"`
				Subnet  string              `json:"subnet"`
				DataDir string              `json:"dataDir"`
				Routes  []map[string]string `json:"routes"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	br := raw.Plugins[0]
	tests := []struct {
		field     string
		got, want any
	}{
		{"type", br.Type, "bridge"},
		{"bridge", br.Bridge, "podvisor0"},
		{"isGateway", br.IsGateway, true},
		{"ipMasq", br.IPMasq, true},
		{"hairpinMode", br.HairpinMode, true},
		{"ipam.type", br.IPAM.Type, "host-local"},
		{"ipam.subnet", br.IPAM.Subnet, "10.99.0.0/16"},
		{"ipam.dataDir", br.IPAM.DataDir, "/state/cni/networks"},
		{"ipam.routes", len(br.IPAM.Routes) == 1 && br.IPAM.Routes[0]["dst"] == "0.0.0.0/0", true},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("bridge %s = %v, want %v", tt.field, tt.got, tt.want)
		}
	}

	var noDataDir struct {
		Plugins []struct {
			IPAM map[string]any `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(BuiltinConfList("10.99.0.0/16", ""), &noDataDir); err != nil {
		t.Fatal(err)
	}
	if _, ok := noDataDir.Plugins[0].IPAM["dataDir"]; ok {
		t.Errorf("empty dataDir is written out: %v", noDataDir.Plugins[0].IPAM)
	}
}

func TestLoadNetwork(t *testing.T) {
	const (
		listA   = `{"cniVersion":"1.0.0","name":"net-a","plugins":[{"type":"bridge"}]}`
		listB   = `{"cniVersion":"1.0.0","name":"net-b","plugins":[{"type":"ptp"}]}`
		single  = `{"cniVersion":"0.4.0","name":"single","type":"bridge","bridge":"x0"}`
		broken  = `{"cniVersion":"1.0.0","name":`
		noPlugs = `{"cniVersion":"1.0.0","name":"empty","plugins":[]}`
	)
	tests := []struct {
		name     string
		files    map[string]string
		wantNet  string
		wantType string
		wantErr  bool
	}{
		{name: "empty dir uses built-in", files: nil, wantNet: "podvisor", wantType: "bridge"},
		{name: "lexical order wins", files: map[string]string{"20-b.conflist": listB, "10-a.conflist": listA}, wantNet: "net-a", wantType: "bridge"},
		{name: "conf beats later conflist", files: map[string]string{"05-single.conf": single, "10-a.conflist": listA}, wantNet: "single", wantType: "bridge"},
		{name: "json extension", files: map[string]string{"99.json": listB}, wantNet: "net-b", wantType: "ptp"},
		{name: "other extensions ignored", files: map[string]string{"00.txt": listA, "10.conflist~": listA}, wantNet: "podvisor", wantType: "bridge"},
		{name: "conflist in a .conf file", files: map[string]string{"10.conf": listB}, wantNet: "net-b", wantType: "ptp"},
		{name: "invalid file skipped", files: map[string]string{"00-broken.conflist": broken, "10-b.conflist": listB}, wantNet: "net-b", wantType: "ptp"},
		{name: "only invalid files is an error", files: map[string]string{"00-broken.conflist": broken, "01-empty.conflist": noPlugs}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			m, err := New(Config{ConfDir: dir, BinDirs: []string{"/nonexistent"}, CacheDir: t.TempDir()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			list, err := m.loadNetwork()
			if tt.wantErr {
				if err == nil {
					t.Fatalf("loadNetwork = %s, want error", list.Name)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if list.Name != tt.wantNet || list.Plugins[0].Network.Type != tt.wantType {
				t.Errorf("network = %s (%s), want %s (%s)", list.Name, list.Plugins[0].Network.Type, tt.wantNet, tt.wantType)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no cache dir", Config{BinDirs: []string{"/opt/cni/bin"}}},
		{"no bin dir", Config{CacheDir: "/tmp/x"}},
		{"bad cidr", Config{CacheDir: "/tmp/x", BinDirs: []string{"/opt/cni/bin"}, PodCIDR: "10.0.0.0"}},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg, nil); err == nil {
			t.Errorf("%s: New succeeded, want error", tt.name)
		}
	}
}

func TestRuntimeConf(t *testing.T) {
	rt := runtimeConf("sb1", "/run/ns", "eth0", PodRef{Namespace: "kube-system", Name: "etcd-n1", UID: "u1"}, []PortMapping{
		{HostPort: 8080, ContainerPort: 80},
		{ContainerPort: 9090, Protocol: "TCP"},
		{HostPort: 53, ContainerPort: 5353, Protocol: "UDP", HostIP: "127.0.0.1"},
	})
	want := [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", "kube-system"}, {"K8S_POD_NAME", "etcd-n1"}, {"K8S_POD_INFRA_CONTAINER_ID", "sb1"}, {"K8S_POD_UID", "u1"}}
	if len(rt.Args) != len(want) {
		t.Fatalf("args = %v, want %v", rt.Args, want)
	}
	for i := range want {
		if rt.Args[i] != want[i] {
			t.Errorf("arg %d = %v, want %v", i, rt.Args[i], want[i])
		}
	}
	got, _ := json.Marshal(rt.CapabilityArgs)
	const wantCaps = `{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"},{"hostPort":53,"containerPort":5353,"protocol":"udp","hostIP":"127.0.0.1"}]}`
	if string(got) != wantCaps {
		t.Errorf("capability args = %s, want %s", got, wantCaps)
	}
	if rt := runtimeConf("sb1", "", "eth0", PodRef{}, []PortMapping{{ContainerPort: 80}}); rt.CapabilityArgs != nil {
		t.Errorf("capability args without host ports = %v, want none", rt.CapabilityArgs)
	}
	if p := podFromArgs(want); p != (PodRef{Namespace: "kube-system", Name: "etcd-n1", UID: "u1"}) {
		t.Errorf("podFromArgs = %+v", p)
	}
}
