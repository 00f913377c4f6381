package podfile

// selinuxNote is the note of the two seLinuxOptions rows.
const selinuxNote = "as containerd's CRI: the level's format is checked (a bad one waits in CreateContainerError); on a host without SELinux the labels are ignored; on a host with SELinux enabled podvisor applies no labels, so a container with seLinuxOptions (its own, else the pod's) waits in CreateContainerError saying so rather than run with another label"

// windowsOptionsNote is the note of the two windowsOptions rows.
const windowsOptionsNote = "Windows only, which kubelet on Linux ignores; with spec.os.name linux it is refused, as Kubernetes' validation refuses it"
