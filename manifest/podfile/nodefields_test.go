package podfile

import (
	"strings"
	"testing"
)

// specWith is basePod with lines added under spec.
func specWith(lines string) string {
	return strings.Replace(basePod, "spec:\n", "spec:\n"+lines, 1)
}

// Fields kubelet implements on its own are accepted; Kubernetes'
// validation of them is kept.
func TestNodeFieldsValidation(t *testing.T) {
	for _, tc := range []struct {
		name, manifest string
		errs           []string // substrings of the joined errors; none: accepted
		warn           string   // substring of a warning
	}{
		{name: "hostnameOverride", manifest: specWith("  hostnameOverride: db.example.org\n")},
		{name: "hostnameOverride and setHostnameAsFQDN", manifest: specWith("  hostnameOverride: db\n  setHostnameAsFQDN: true\n"),
			errs: []string{"spec.hostnameOverride: Forbidden: may not be specified when setHostnameAsFQDN is true"}},
		{name: "hostnameOverride and hostNetwork", manifest: specWith("  hostnameOverride: db\n  hostNetwork: true\n"),
			errs: []string{"spec.hostnameOverride: Forbidden: may not be specified when hostNetwork is true"}},
		{name: "hostnameOverride too long", manifest: specWith("  hostnameOverride: " + strings.Repeat("a", 65) + "\n"),
			errs: []string{"spec.hostnameOverride: Too long: may not be more than 64 bytes"}},
		{name: "hostnameOverride not a subdomain", manifest: specWith("  hostnameOverride: DB_1\n"),
			errs: []string{"spec.hostnameOverride: Invalid value", "RFC 1123 subdomain"}},
		{name: "seLinuxOptions", manifest: specWith("  securityContext:\n    seLinuxOptions: {type: spc_t, level: \"s0:c1,c2\"}\n    seLinuxChangePolicy: MountOption\n") +
			"    securityContext:\n      seLinuxOptions: {user: system_u}\n"},
		{name: "seLinuxChangePolicy unknown", manifest: specWith("  securityContext:\n    seLinuxChangePolicy: Sometimes\n"),
			errs: []string{"spec.securityContext.seLinuxChangePolicy: Unsupported value: \"Sometimes\""}},
		{name: "windowsOptions", manifest: specWith("  securityContext:\n    windowsOptions: {runAsUserName: ContainerUser}\n") +
			"    securityContext:\n      windowsOptions: {hostProcess: false}\n",
			warn: "spec.securityContext.windowsOptions: ignored by podvisor (Windows only"},
		{name: "windowsOptions, container", manifest: basePod + "    securityContext:\n      windowsOptions: {runAsUserName: ContainerUser}\n",
			warn: "spec.containers[0].securityContext.windowsOptions: ignored by podvisor (Windows only"},
		{name: "fileKeyRef", manifest: specWith("  volumes:\n  - {name: config, emptyDir: {}}\n") +
			"    env:\n    - name: DB\n      valueFrom: {fileKeyRef: {volumeName: config, path: env/db, key: DB, optional: true}}\n"},
		{name: "fileKeyRef of a hostPath", manifest: specWith("  volumes:\n  - {name: config, hostPath: {path: /etc}}\n") +
			"    env:\n    - name: DB\n      valueFrom: {fileKeyRef: {volumeName: config, path: env, key: DB}}\n",
			errs: []string{"spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Invalid value: \"config\": referenced volume must be of type emptyDir"}},
		{name: "fileKeyRef with ..", manifest: specWith("  volumes:\n  - {name: config, emptyDir: {}}\n") +
			"    env:\n    - name: DB\n      valueFrom: {fileKeyRef: {volumeName: config, path: ../env, key: DB}}\n",
			errs: []string{"spec.containers[0].env[0].valueFrom.fileKeyRef.path: Invalid value"}},
		{name: "windowsOptions with os linux", manifest: specWith("  os: {name: linux}\n  securityContext:\n    windowsOptions: {runAsUserName: ContainerUser}\n"),
			errs: []string{"spec.securityContext.windowsOptions: Forbidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods, errs := parseDefault("pod.yaml", []byte(tc.manifest), node)
			got := joinErrs(errs)
			if len(tc.errs) == 0 && got != "" {
				t.Fatalf("refused: %s", got)
			}
			for _, want := range tc.errs {
				if !strings.Contains(got, want) {
					t.Errorf("errors %q lack %q", got, want)
				}
			}
			if tc.warn != "" {
				var ws []string
				for _, p := range pods {
					ws = append(ws, p.Warnings...)
				}
				if w := strings.Join(ws, "\n"); !strings.Contains(w, tc.warn) {
					t.Errorf("warnings %q lack %q", w, tc.warn)
				}
			}
		})
	}
}
