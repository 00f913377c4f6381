// Package printers prints what the podvisor CLI shows, as kubectl (and, for
// ps and images, crictl) print the same objects: pod and event tables,
// -o wide/json/yaml/name/jsonpath/custom-columns, describe, top, ps and
// images. Each printer writes to the io.Writer it is given, with the current
// time passed in, and talks to no daemon; only -o jsonpath-file and
// custom-columns-file read a file.
//
// Contract:
//
//   - Pods and Events print what kubectl get pods and kubectl get events
//     print for the same objects with the same output flags (Options: -o
//     wide/json/yaml/name/jsonpath/custom-columns, -A, --no-headers,
//     --show-labels, --sort-by); one named pod prints as the Pod, anything
//     else as kubectl's List. Options.Validate refuses what cannot be
//     printed before anything is asked of the daemon.
//   - LocalObjects prints the local ConfigMaps and Secrets as kubectl get
//     configmaps and get secrets do (with -o wide's FILE and PODS);
//     DescribeConfigMap and DescribeSecret as kubectl describe does, with
//     the pods using each. No Secret value is ever printed: each value of
//     data shows as api.RedactedValue, describe shows sizes.
//   - PrintDescribe prints what kubectl describe pod prints; TopPods what
//     kubectl top pod prints; PS and Images what crictl ps and crictl
//     images print.
//   - PodStuck says why a pod is stuck (image, CNI, volume, config,
//     back-off, probe, failed run) from its status and events, for the
//     first line of describe pod; a pod that is fine gets none. Its Line
//     adds a back-off's last log lines, which the caller fetches.
//   - PrintPods and PrintEvents are the older forms (a format string, lists
//     as PodList and EventList); PodHeader/PodRow, EventHeader/EventRow and
//     their Options methods are a table's rows, and Table keeps a table's
//     column widths for the rows a watch prints later.
//   - Everything a container controls is printed with its control
//     characters escaped (Escape; kubectl's CVE-2021-25743 class): in every
//     table cell, in describe and in jsonpath and custom-columns text. No
//     escape sequence a container wrote reaches the terminal. -o json and
//     -o yaml are escaped by their encoders.
//   - describe cuts each message a container controls to a screenful
//     (MaxMessageLines lines, MaxMessageBytes bytes) and says how much it cut.
//   - Printers never modify what they are given.
package printers
