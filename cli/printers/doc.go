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
//   - Everything a container controls is printed with its control
//     characters escaped (Escape; kubectl's CVE-2021-25743 class): in every
//     table cell, in describe and in jsonpath and custom-columns text. No
//     escape sequence a container wrote reaches the terminal. -o json and
//     -o yaml are escaped by their encoders.
//   - describe cuts each message a container controls to a screenful
//     (MaxMessageLines lines, MaxMessageBytes bytes) and says how much it cut.
//   - Printers never modify what they are given.
package printers
