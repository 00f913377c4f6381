package daemon

import (
	ctrd "github.com/podvisor/podvisor/supervise/containerd"
	"path/filepath"
	"strings"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/auth"
	"github.com/podvisor/podvisor/certs"
	"github.com/podvisor/podvisor/internal/cdidev"
	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/pressure"
	"github.com/podvisor/podvisor/pressure/reclaim"
	"github.com/podvisor/podvisor/rollout"
	"github.com/podvisor/podvisor/shutdown"
	"github.com/podvisor/podvisor/supervise"
	"github.com/spf13/pflag"
)

// Config is everything `podvisor run` is told: one field per run flag,
// the yaml key of each the flag's configuration-file key. Default gives
// every field its flag's default; Validate says what is wrong with it.
type Config struct {
	Manifests                 string        `yaml:"manifests"`
	NodeName                  string        `yaml:"nodeName"`
	UnknownFields             string        `yaml:"unknownFields"`
	NodeIP                    string        `yaml:"nodeIP"`
	ClusterDomain             string        `yaml:"clusterDomain"` // "": none
	ContainerdAddress         string        `yaml:"containerdAddress"`
	ContainerdNamespace       string        `yaml:"containerdNamespace"`
	StateDir                  string        `yaml:"stateDir"`
	RunDir                    string        `yaml:"runDir"`
	LogDir                    string        `yaml:"logDir"`
	VolumesDir                string        `yaml:"volumesDir"` // "": <state-dir>/volumes
	CNIConfDir                string        `yaml:"cniConfDir"`
	CNIBinDir                 string        `yaml:"cniBinDir"`
	PodCIDR                   string        `yaml:"podCIDR"`
	ImagesDir                 string        `yaml:"imagesDir"`
	EmbeddedContainerd        bool          `yaml:"embeddedContainerd"`
	ContainerdBinary          string        `yaml:"containerdBinary"`
	ContainerLogMaxSize       string        `yaml:"containerLogMaxSize"`
	ContainerLogMaxFiles      int           `yaml:"containerLogMaxFiles"`
	ContainerLogLinks         string        `yaml:"containerLogLinks"` // "": none
	LogLevel                  string        `yaml:"logLevel"`
	RuntimeRequestTimeout     time.Duration `yaml:"runtimeRequestTimeout"` // 0: no bound
	ImagePullProgressDeadline time.Duration `yaml:"imagePullProgressDeadline"`
	RegistryConfigDir         string        `yaml:"registryConfigDir"`
	CDISpecDirs               string        `yaml:"cdiSpecDirs"` // comma-separated
	ImageCredentialsFile      string        `yaml:"imageCredentialsFile"`
	RelistPeriod              time.Duration `yaml:"relistPeriod"`
	ManifestRelistPeriod      time.Duration `yaml:"manifestRelistPeriod"`
	// Rollout's node-wide defaults (package rollout); 0: off.
	ProgressDeadline   time.Duration `yaml:"progressDeadline"`
	MinReady           time.Duration `yaml:"minReady"`
	Kubeconfig         string        `yaml:"kubeconfig"`
	HealthzBindAddress string        `yaml:"healthzBindAddress"`
	TLSBindAddress     string        `yaml:"tlsBindAddress"`
	TLSCertFile        string        `yaml:"tlsCertFile"`
	TLSPrivateKeyFile  string        `yaml:"tlsPrivateKeyFile"`
	ClientCAFile       string        `yaml:"clientCAFile"`
	// Authentication and authorization on --tls-bind-address
	// (daemon/auth.go), kubelet's flags but for the policy file and the
	// profiling handler.
	AuthorizationMode                        string        `yaml:"authorizationMode"` // "": Webhook with --kubeconfig, else Policy
	AuthorizationPolicyFile                  string        `yaml:"authorizationPolicyFile"`
	AuthenticationTokenWebhook               bool          `yaml:"authenticationTokenWebhook"`
	AuthenticationTokenWebhookCacheTTL       time.Duration `yaml:"authenticationTokenWebhookCacheTTL"`
	AuthorizationWebhookCacheAuthorizedTTL   time.Duration `yaml:"authorizationWebhookCacheAuthorizedTTL"`
	AuthorizationWebhookCacheUnauthorizedTTL time.Duration `yaml:"authorizationWebhookCacheUnauthorizedTTL"`
	EnableProfilingHandler                   bool          `yaml:"enableProfilingHandler"`
	// Certificates (issue 18), kubelet's flags.
	CertDir                  string `yaml:"certDir"`
	RotateCertificates       bool   `yaml:"rotateCertificates"`
	RotateServerCertificates bool   `yaml:"rotateServerCertificates"`
	BootstrapKubeconfig      string `yaml:"bootstrapKubeconfig"`
	ExitWhenEmpty            bool   `yaml:"exitWhenEmpty"`
	// Graceful node shutdown (daemon/shutdown.go): kubelet's two forms.
	ShutdownGracePeriod              time.Duration    `yaml:"shutdownGracePeriod"`
	ShutdownGracePeriodCriticalPods  time.Duration    `yaml:"shutdownGracePeriodCriticalPods"`
	ShutdownGracePeriodByPodPriority shutdown.Periods `yaml:"shutdownGracePeriodByPodPriority"`
	// Image garbage collection (pressure/reclaim), as kubelet's.
	ImageGCHighThreshold int           `yaml:"imageGCHighThreshold"`
	ImageGCLowThreshold  int           `yaml:"imageGCLowThreshold"`
	ImageMinimumGCAge    time.Duration `yaml:"imageMinimumGCAge"`
	ImageMaximumGCAge    time.Duration `yaml:"imageMaximumGCAge"` // 0: off

	// Node pressure and eviction (daemon/pressure.go), kubelet's settings.
	EvictionHard                     string        `yaml:"evictionHard"` // "" or "none": no hard thresholds
	EvictionSoft                     string        `yaml:"evictionSoft"`
	EvictionSoftGracePeriod          string        `yaml:"evictionSoftGracePeriod"`
	EvictionMinimumReclaim           string        `yaml:"evictionMinimumReclaim"`
	EvictionPressureTransitionPeriod time.Duration `yaml:"evictionPressureTransitionPeriod"`
	EvictionMaxPodGracePeriod        int           `yaml:"evictionMaxPodGracePeriod"` // seconds; 0: the pod's own
	EvictionMonitoringInterval       time.Duration `yaml:"evictionMonitoringInterval"`
	// Hardening (issue 17).
	PodPidsLimit           int64 `yaml:"podPidsLimit"` // -1: none
	AllowInsecureManifests bool  `yaml:"allowInsecureManifests"`
	// Pod security.
	AllowedUnsafeSysctls string `yaml:"allowedUnsafeSysctls"` // comma-separated
	SeccompProfileRoot   string `yaml:"seccompProfileRoot"`

	// The configuration file's sections, which no flag mirrors
	// (configSections).
	RuntimeClasses map[string]ctrd.RuntimeClass `yaml:"runtimeClasses"` // by name
}

// DefaultPodPidsLimit is --pod-pids-limit's default: kubelet's is
// unlimited, a box nobody watches needs a finite one.
const DefaultPodPidsLimit = 4096

// DefaultImageCredentialsFile is --image-credentials-file's default;
// KubeletCredentialsFile is read in its place when it is missing.
const (
	DefaultImageCredentialsFile = "/var/lib/podvisor/config.json"
	KubeletCredentialsFile      = "/var/lib/kubelet/config.json"
)

// credentialsFiles are the files of node-wide credentials, in order.
func (c *Config) credentialsFiles() []string {
	if c.ImageCredentialsFile == DefaultImageCredentialsFile {
		return []string{DefaultImageCredentialsFile, KubeletCredentialsFile}
	}
	return []string{c.ImageCredentialsFile}
}

// DefaultCertDir is --cert-dir's default, kubelet's: kubeadm's kubelet.conf
// names kubelet-client-current.pem there once kubelet-finalize ran, and
// podvisor stands in for the node's kubelet (one identity,
// system:node:<node>, one set of certificates).
const DefaultCertDir = "/var/lib/kubelet/pki"

// DefaultLogDir is kubelet's log directory, podvisor's default.
const DefaultLogDir = "/var/log/pods"

// Default is the configuration of `podvisor run` without flags or file.
func Default() Config {
	return Config{
		Manifests:                 "/etc/kubernetes/manifests",
		UnknownFields:             "error",
		ContainerdAddress:         "/run/containerd/containerd.sock",
		ContainerdNamespace:       "podvisor",
		StateDir:                  "/var/lib/podvisor",
		RunDir:                    "/run/podvisor",
		LogDir:                    DefaultLogDir,
		CNIConfDir:                "/etc/cni/net.d",
		CNIBinDir:                 "/opt/cni/bin:/usr/lib/cni",
		PodCIDR:                   "10.88.0.0/16",
		ImagesDir:                 "/var/lib/podvisor/images",
		ContainerdBinary:          "containerd",
		ContainerLogMaxSize:       "10Mi",
		ContainerLogMaxFiles:      crilog.DefaultMaxFiles,
		ContainerLogLinks:         DefaultLogLinks(DefaultLogDir),
		LogLevel:                  "info",
		RuntimeRequestTimeout:     supervise.DefaultRequestTimeout,
		RelistPeriod:              10 * time.Second,
		ImagePullProgressDeadline: ctrd.DefaultPullProgressDeadline,
		RegistryConfigDir:         ctrd.DefaultRegistryConfigDir,
		CDISpecDirs:               strings.Join(cdidev.DefaultSpecDirs, ","),
		ImageCredentialsFile:      DefaultImageCredentialsFile,
		CertDir:                   DefaultCertDir,
		RotateCertificates:        true,
		ManifestRelistPeriod:      manifest.DefaultRelistPeriod,
		// Graceful node shutdown is on: a box nobody watches is powered
		// off and rebooted by people who do not know podvisor is there.
		ShutdownGracePeriod:             DefaultShutdownGracePeriod,
		ShutdownGracePeriodCriticalPods: DefaultShutdownGracePeriodCriticalPods,
		ImageGCHighThreshold:            reclaim.DefaultPolicy.HighThresholdPercent,
		ImageGCLowThreshold:             reclaim.DefaultPolicy.LowThresholdPercent,
		ImageMinimumGCAge:               reclaim.DefaultPolicy.MinAge,

		EvictionHard:                     pressure.DefaultHard,
		EvictionPressureTransitionPeriod: pressure.DefaultTransitionPeriod,
		EvictionMonitoringInterval:       pressure.DefaultMonitoringInterval,
		PodPidsLimit:                     DefaultPodPidsLimit,
		SeccompProfileRoot:               DefaultSeccompProfileRoot,

		AuthenticationTokenWebhookCacheTTL:       auth.DefaultTokenCacheTTL,
		AuthorizationWebhookCacheAuthorizedTTL:   auth.DefaultAuthorizedCacheTTL,
		AuthorizationWebhookCacheUnauthorizedTTL: auth.DefaultUnauthorizedCacheTTL,
	}
}

// DefaultLogLinks is --container-log-links when neither the flag nor the
// file gives it: kubelet's /var/log/containers when the logs are
// kubelet's /var/log/pods, else none.
func DefaultLogLinks(logDir string) string {
	if filepath.Clean(logDir) == DefaultLogDir {
		return "/var/log/containers"
	}
	return ""
}

// ConfigFlag is the name of the flag that names the configuration file.
const ConfigFlag = "config"

// AddFlags defines the run flags on fs, each bound to its field of c and
// defaulting to c's value (give it Default()'s).
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Manifests, "manifests", c.Manifests, "directory of Pod manifests")
	fs.StringVar(&c.NodeName, "node-name", c.NodeName, "node name, a DNS-1123 subdomain once lowercased (default: the lowercased hostname, remembered in the state dir)")
	AddUnknownFieldsFlag(fs, &c.UnknownFields)
	fs.StringVar(&c.NodeIP, "node-ip", c.NodeIP, "this node's IP, reported as hostIP (default: the first global IPv4 address of an up interface)")
	fs.StringVar(&c.ClusterDomain, "cluster-domain", c.ClusterDomain, "the cluster's DNS domain, kubelet's (cluster.local): a pod with a subdomain gets <hostname>.<subdomain>.<namespace>.svc.<domain> in /etc/hosts, and as its hostname with setHostnameAsFQDN (default: none; subdomain is then ignored)")
	fs.StringVar(&c.ContainerdAddress, "containerd-address", c.ContainerdAddress, "containerd socket (ignored with --embedded-containerd)")
	fs.StringVar(&c.ContainerdNamespace, "containerd-namespace", c.ContainerdNamespace, "containerd namespace podvisor owns")
	fs.StringVar(&c.StateDir, "state-dir", c.StateDir, "persistent state")
	fs.StringVar(&c.RunDir, "run-dir", c.RunDir, "runtime state (namespaces, API socket <run-dir>/podvisor.sock)")
	fs.StringVar(&c.LogDir, "log-dir", c.LogDir, "container logs")
	fs.StringVar(&c.VolumesDir, "volumes-dir", c.VolumesDir, "the directories provisioned for PersistentVolumeClaims bound to no PersistentVolume, one per claim, <namespace>_<name> (default: <state-dir>/volumes)")
	fs.StringVar(&c.CNIConfDir, "cni-conf-dir", c.CNIConfDir, "CNI network configs (first in lexical order wins; none: the built-in network)")
	fs.StringVar(&c.CNIBinDir, "cni-bin-dir", c.CNIBinDir, "colon-separated CNI plugin dirs")
	fs.StringVar(&c.PodCIDR, "pod-cidr", c.PodCIDR, "subnet of the built-in network")
	fs.StringVar(&c.ImagesDir, "images-dir", c.ImagesDir, "image archives (*.tar) imported at start and when written")
	fs.BoolVar(&c.EmbeddedContainerd, "embedded-containerd", c.EmbeddedContainerd, "run a private containerd (socket under --run-dir, root under --state-dir)")
	fs.StringVar(&c.ContainerdBinary, "containerd-binary", c.ContainerdBinary, "containerd executable for --embedded-containerd")
	fs.StringVar(&c.ContainerLogMaxSize, "container-log-max-size", c.ContainerLogMaxSize, "size at which a container's log file rotates: bytes or a quantity as kubelet's (10Mi, 500Ki, 1G)")
	fs.IntVar(&c.ContainerLogMaxFiles, "container-log-max-files", c.ContainerLogMaxFiles, "files a container's log may take, the live one included (at least 2); older rotated files are gzipped")
	fs.StringVar(&c.ContainerLogLinks, "container-log-links", c.ContainerLogLinks, `directory of kubelet's <pod>_<namespace>_<container>-<id>.log links to the live logs, for log shippers ("": none; default: /var/log/containers when --log-dir is /var/log/pods, else none)`)
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error (default: info, or debug with -v 4 or more)")
	fs.DurationVar(&c.RuntimeRequestTimeout, "runtime-request-timeout", c.RuntimeRequestTimeout, "bound of every containerd call, CNI ADD/DEL, image lookup, unpack and import (a pull is bounded by --image-pull-progress-deadline) (a CNI plugin still running then is killed; 0: none)")
	fs.DurationVar(&c.ImagePullProgressDeadline, "image-pull-progress-deadline", c.ImagePullProgressDeadline, "an image pull that receives no byte for this long is cut (ErrImagePull); one that keeps receiving is never cut, whatever --runtime-request-timeout says")
	fs.StringVar(&c.RegistryConfigDir, "registry-config-dir", c.RegistryConfigDir, "per-registry mirrors, CAs and plain HTTP in containerd's layout, <dir>/<host>/hosts.toml (a registry on localhost needs none: plain HTTP or unverified HTTPS)")
	fs.StringVar(&c.CDISpecDirs, "cdi-spec-dirs", c.CDISpecDirs, "directories of CDI specs (Container Device Interface), comma-separated, later ones taking precedence, as containerd's cdi_spec_dirs: an extended resource such as nvidia.com/gpu is given devices of that CDI kind, and pod annotations cdi.k8s.io/<key> name devices (\"\": no devices)")
	fs.StringVar(&c.ImageCredentialsFile, "image-credentials-file", c.ImageCredentialsFile, "node-wide registry credentials, a docker config.json whose auths match by registry host and path as kubelet's; with the default, "+KubeletCredentialsFile+" is read when it is missing")
	fs.DurationVar(&c.RelistPeriod, "relist-period", c.RelistPeriod, "how often containerd's tasks are listed and the pods whose containers changed re-checked (a safety net: exits arrive as events)")
	fs.DurationVar(&c.ManifestRelistPeriod, "manifest-relist-period", c.ManifestRelistPeriod, "how often the manifests directory is re-read in full (a safety net: changes arrive through inotify)")
	fs.DurationVar(&c.ProgressDeadline, "progress-deadline", c.ProgressDeadline, "a manifest change to a Ready pod must make it Ready (for --min-ready) within this time, else the previous revision is restored (annotation "+rollout.ProgressDeadlineAnnotation+" per pod; 0: off)")
	fs.DurationVar(&c.MinReady, "min-ready", c.MinReady, "how long a changed pod must stay Ready before its new revision counts as rolled out (annotation "+rollout.MinReadyAnnotation+" per pod)")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "kubeconfig of an apiserver to register the node and mirror the pods in, as kubelet does for static pods (e.g. /etc/kubernetes/kubelet.conf); it need not answer, nor exist, yet (default: none)")
	fs.StringVar(&c.HealthzBindAddress, "healthz-bind-address", c.HealthzBindAddress, "serve kubelet's health endpoint /healthz on this address (kubelet's is 127.0.0.1:10248; default: off)")
	fs.StringVar(&c.TLSBindAddress, "tls-bind-address", c.TLSBindAddress, "serve the API (and kubelet's) over HTTPS on HOST:PORT too, to clients authenticated by a certificate from --client-ca-file or, with --authentication-token-webhook, a token, and authorized by --authorization-mode (default: off)")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", c.TLSCertFile, "server certificate (PEM) for --tls-bind-address, re-read when it changes")
	fs.StringVar(&c.TLSPrivateKeyFile, "tls-private-key-file", c.TLSPrivateKeyFile, "private key (PEM) of --tls-cert-file")
	fs.StringVar(&c.ClientCAFile, "client-ca-file", c.ClientCAFile, "CA certificates (PEM) a client certificate of --tls-bind-address must chain to")
	c.addAuthFlags(fs)
	fs.StringVar(&c.CertDir, "cert-dir", c.CertDir, "where the certificates are: the self-signed serving pair kubelet.crt and kubelet.key, kubelet-client-current.pem and kubelet-server-current.pem (kubelet's layout)")
	fs.BoolVar(&c.RotateCertificates, "rotate-certificates", c.RotateCertificates, "renew the --kubeconfig's client certificate through a CertificateSigningRequest before it expires, as kubelet (kept as kubelet-client-current.pem in --cert-dir; a token kubeconfig has nothing to renew)")
	fs.BoolVar(&c.RotateServerCertificates, "rotate-server-certificates", c.RotateServerCertificates, "without --tls-cert-file, serve --tls-bind-address with a certificate requested through a kubernetes.io/kubelet-serving CertificateSigningRequest, as kubelet's serverTLSBootstrap; someone must approve it (default: a self-signed one in --cert-dir)")
	fs.StringVar(&c.BootstrapKubeconfig, "bootstrap-kubeconfig", c.BootstrapKubeconfig, "kubeconfig with a bootstrap token: when --kubeconfig is missing or its certificate expired, request a client certificate with it and write --kubeconfig naming kubelet-client-current.pem, as kubelet's TLS bootstrap (default: none)")
	fs.BoolVar(&c.ExitWhenEmpty, "exit-when-empty", c.ExitWhenEmpty, "with a manifests dir holding no manifest: stop and remove every pod, then exit (make demo-clean uses it)")
	fs.DurationVar(&c.ShutdownGracePeriod, "shutdown-grace-period", c.ShutdownGracePeriod, "graceful node shutdown: at power-off or reboot (logind's PrepareForShutdown) the pods are stopped within this period, critical pods last, under a logind delay lock (0: off)")
	fs.DurationVar(&c.ShutdownGracePeriodCriticalPods, "shutdown-grace-period-critical-pods", c.ShutdownGracePeriodCriticalPods, "the part of --shutdown-grace-period kept for critical pods (priority 2000000000 or more, system-cluster-critical, system-node-critical), stopped after the others")
	fs.Var(&c.ShutdownGracePeriodByPodPriority, "shutdown-grace-period-by-pod-priority", "kubelet's shutdownGracePeriodByPodPriority as PRIORITY=DURATION,... (e.g. 2000000000=10s,0=20s): pods are stopped by group, lowest priority first, each group within its period; when given, replaces the two flags above")
	fs.IntVar(&c.ImageGCHighThreshold, "image-gc-high-threshold", c.ImageGCHighThreshold, "percent of the image filesystem used at or above which unused, unpinned images are removed, oldest last use first (as kubelet's)")
	fs.IntVar(&c.ImageGCLowThreshold, "image-gc-low-threshold", c.ImageGCLowThreshold, "percent of the image filesystem used that image garbage collection frees down to (at most --image-gc-high-threshold)")
	fs.DurationVar(&c.ImageMinimumGCAge, "image-minimum-gc-age", c.ImageMinimumGCAge, "an image younger than this is never garbage collected")
	fs.DurationVar(&c.ImageMaximumGCAge, "image-maximum-gc-age", c.ImageMaximumGCAge, "an unpinned image unused for longer is removed whatever the disk (0: off)")

	// Node pressure and eviction, as kubelet's flags.
	fs.StringVar(&c.EvictionHard, "eviction-hard", c.EvictionHard, `hard eviction thresholds, SIGNAL<QUANTITY or SIGNAL<PERCENT,... (signals: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available; "" or none: no hard thresholds)`)
	fs.StringVar(&c.EvictionSoft, "eviction-soft", c.EvictionSoft, "soft eviction thresholds, as --eviction-hard; each needs a grace period")
	fs.StringVar(&c.EvictionSoftGracePeriod, "eviction-soft-grace-period", c.EvictionSoftGracePeriod, "how long each soft threshold must be met before a pod is evicted, SIGNAL=DURATION,... (memory.available=1m30s)")
	fs.StringVar(&c.EvictionMinimumReclaim, "eviction-minimum-reclaim", c.EvictionMinimumReclaim, "how far past its threshold a signal must get before the pressure is resolved, SIGNAL=QUANTITY,... (nodefs.available=500Mi)")
	fs.DurationVar(&c.EvictionPressureTransitionPeriod, "eviction-pressure-transition-period", c.EvictionPressureTransitionPeriod, "how long a pressure condition stays True after its last threshold met")
	fs.IntVar(&c.EvictionMaxPodGracePeriod, "eviction-max-pod-grace-period", c.EvictionMaxPodGracePeriod, "the longest grace period, in seconds, of a pod evicted for a soft threshold (0: the pod's own)")
	fs.DurationVar(&c.EvictionMonitoringInterval, "eviction-monitoring-interval", c.EvictionMonitoringInterval, "how often the eviction signals are measured and acted on")
	fs.Int64Var(&c.PodPidsLimit, "pod-pids-limit", c.PodPidsLimit, "processes (pids.max) each pod's cgroup may hold, as kubelet's podPidsLimit (kubelet's default is unlimited; -1: none)")
	AddAllowInsecureFlag(fs, &c.AllowInsecureManifests)
	fs.StringVar(&c.AllowedUnsafeSysctls, "allowed-unsafe-sysctls", c.AllowedUnsafeSysctls, "unsafe sysctls pods may set besides kubelet's safe ones, comma-separated names and prefix* globs (kernel.msg*,net.core.somaxconn), each namespaced: kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*, net.*; a pod setting any other fails with SysctlForbidden, as under kubelet")
	fs.StringVar(&c.SeccompProfileRoot, "seccomp-profile-root", c.SeccompProfileRoot, "directory of the seccomp profiles (JSON, as containerd's CRI loads them) that seccompProfile type Localhost names by localhostProfile, kubelet's")
}

// AddAllowInsecureFlag defines --allow-insecure-manifests (run and
// validate share it).
func AddAllowInsecureFlag(fs *pflag.FlagSet, p *bool) {
	fs.BoolVar(p, "allow-insecure-manifests", *p, "use, with a warning, manifests, image archives and their directories that a user other than root could change (default: they are not used)")
}

// AddUnknownFieldsFlag defines --unknown-fields (run and validate share it).
func AddUnknownFieldsFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "unknown-fields", *p, "unknown manifest fields: error (the file is invalid) or warn (accepted with a warning, for manifests newer than podvisor's API version)")
}

// ConfigKey is a flag's key in the file: container-log-max-size is
// containerLogMaxSize; initialisms are upper case after the first word, as
// KubeletConfiguration writes them (node-ip is nodeIP, pod-cidr podCIDR,
// client-ca-file clientCAFile).
func ConfigKey(flag string) string {
	parts := strings.Split(flag, "-")
	for i := 1; i < len(parts); i++ {
		switch {
		case configInitialisms[parts[i]]:
			parts[i] = strings.ToUpper(parts[i])
		case parts[i] != "":
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// configInitialisms are the flag words ConfigKey writes in upper case.
var configInitialisms = map[string]bool{"ip": true, "cidr": true, "ca": true, "cni": true, "api": true, "tls": true, "dns": true, "gc": true, "ttl": true}

// remoteAPI is the remote API the daemon serves: nil without
// --tls-bind-address. Validate has checked it.
func (c *Config) remoteAPI() *api.TLSConfig {
	if c.TLSBindAddress == "" {
		return nil
	}
	t := &api.TLSConfig{Address: c.TLSBindAddress, CertFile: c.TLSCertFile, KeyFile: c.TLSPrivateKeyFile, ClientCAFile: c.ClientCAFile}
	if c.selfServing() {
		// The self-signed pair (daemon/certs.go), unless Run gives
		// GetCertificate.
		d := certs.Dir(c.CertDir)
		t.CertFile, t.KeyFile = d.SelfSignedCert(), d.SelfSignedKey()
	}
	return t
}
