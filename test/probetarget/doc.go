// Command probetarget is the target of probe tests: one static program
// (CGO_ENABLED=0) that answers HTTP, HTTPS, TCP and gRPC health checks the
// way a test tells it to, switched at run time through a state file. The
// test image (test/testenv) carries it as /bin/probetarget.
//
//	probetarget [-addr ADDR] [-http 8080] [-https 8443] [-tcp 8081] [-grpc 8082] [-state FILE]
//
// Each listener's port is a flag: 0 picks a free port, a negative port
// turns the listener off. -addr is the address to bind (default: all
// addresses). At start it prints one line naming the addresses it listens
// on,
//
//	probetarget: listening http=[::]:8080 https=[::]:8443 tcp=[::]:8081 grpc=[::]:8082
//
// and then one line per request it receives (below), all on stdout. SIGTERM
// or SIGINT makes it exit 0 at once, ending hanging answers.
//
// The HTTP and HTTPS listeners answer every path; /headers answers with the
// request's headers in its body, one "Name: value" a line, sorted, Host
// first. HTTPS uses a self-signed certificate made at start (ECDSA P-256,
// for localhost, 127.0.0.1, ::1 and the host name), so clients must skip
// verification, as kubelet's HTTPS probes do. The TCP listener accepts and
// closes each connection. The gRPC listener serves grpc.health.v1.Health
// Check (Watch and List are unimplemented).
//
// # State file
//
// -state names a file read again for every request; a missing or empty
// file (or no -state) means healthy: HTTP 200, TCP listening, gRPC
// SERVING for every service name. Each line is "key=value"; blank lines
// and lines starting with # are ignored, and a line that does not parse is
// reported on stderr and ignored. Write the file by rename, so no request
// reads half of it.
//
//	http=500                         every HTTP path answers 500 (any code 200-599)
//	http:/ready=503                  only path /ready; a path's line wins over http=
//	http=hang                        read the request, never answer (until the client gives up)
//	http=delay:2s                    answer 200 after 2s (a time.ParseDuration value)
//	http=redirect:http://other/x     answer 302 Found with that Location
//	https=..., https:/path=...       the same for the HTTPS listener
//	tcp=closed                       close the TCP listener (connections are refused)
//	tcp=open                         listen again (the default)
//	grpc=NOT_SERVING                 every service: SERVING (default), NOT_SERVING,
//	                                 UNKNOWN or SERVICE_UNKNOWN; NOT_FOUND answers
//	                                 the NotFound error; hang never answers
//	grpc:NAME=...                    only service NAME; wins over grpc=
//
// A closed TCP port has no requests to read the file on: the TCP listener
// reads it every 50ms instead.
//
// # Request log
//
// One line per request on stdout, written when the request arrives, with
// the answer it gets:
//
//	http GET /ready -> 503 proto=HTTP/1.1 remote=10.88.0.1:40312 Host="10.88.0.5:8080" Accept="*/*" User-Agent="kube-probe/1.37"
//	https GET /healthz -> 200 proto=HTTP/1.1 remote=... (headers as above)
//	tcp connect remote=10.88.0.1:40314
//	grpc Check service="" -> SERVING remote=10.88.0.1:40316 user-agent="grpc-go/1.83.2"
//
// HTTP headers follow in canonical form, sorted, values joined by ", " and
// Go-quoted; gRPC metadata likewise, lower case.
package main
