// Package printers prints what the podvisor CLI shows, as kubectl (and, for
// ps and images, crictl) print the same objects: pod and event tables,
// -o wide/json/yaml/name/jsonpath/custom-columns, describe, top, ps and
// images. It is pure: each printer writes to the io.Writer it is given,
// with the current time passed in, and talks to no daemon.
//
// Contract:
//
//   - PrintPods prints what kubectl get pods prints for the same objects,
//     PrintEvents what kubectl get events prints, PrintDescribe what
//     kubectl describe pod prints; Table keeps a table's column widths for
//     the rows a watch prints later.
//   - Printers never modify what they are given.
package printers
