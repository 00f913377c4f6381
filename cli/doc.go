// Package cli is podvisor's command line, on cobra and pflag as kubectl's:
// one file per verb (run, config, get, describe, logs, exec and attach,
// restart, top and top pod, images and ps, validate, fields, version, the
// hidden log-driver, and the hidden docs that writes the man pages make
// install installs), and cobra's completion command.
//
// Contract:
//   - The global flags (--socket with $PODVISOR_SOCKET, --server and the
//     TLS client flags with their $PODVISOR_* variables, -v) are
//     persistent flags of the root: every verb has them by construction.
//   - Flags may come before or after arguments, as in kubectl; after "--"
//     everything is an argument (exec's command).
//   - The verbs talk to the daemon only through the api package's client;
//     `run` and `config view` build a daemon.Config (flags over the
//     --config file over the defaults) and hand it to daemon.Run or
//     daemon.WriteConfig.
//   - -v N is the log verbosity as kubectl's -v: podvisor run without
//     --log-level logs at debug from -v 4 on (klog's debug level), at info
//     below. --version prints the version.
//   - The verbs that name pods read them as kubectl does: NAME or
//     TYPE/NAME (pod/NAME; another type is kubectl's "the server doesn't
//     have a resource type" error), -n/--namespace (default: every
//     namespace, unlike kubectl), -A, -l/--selector (applied by the
//     client, to lists and watches alike); logs, exec and attach default
//     the container as kubectl 1.37 does and say so on stderr.
//   - get and describe also show the local ConfigMaps and Secrets
//     (configmaps|configmap|cm, secrets|secret, or TYPE/NAME), from the
//     API's GET /objects: the versions the daemon uses, their file, and
//     the pods using each; a Secret's values never reach the CLI.
//   - Everything printed goes through cli/printers, which escapes what a
//     container controls; logs alone are printed raw, as kubectl prints
//     them.
//   - Execute prints an error once, as "podvisor: ...", and returns the
//     exit code: 1 for a failure, 2 for a usage error or a configuration
//     the daemon refuses, an exec'd command's own code.
package cli
