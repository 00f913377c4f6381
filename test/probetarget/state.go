package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// state is one reading of the state file: its lines by key ("http",
// "http:/ready", "tcp", "grpc:name", ...).
type state map[string]string

// httpAnswer is what an HTTP or HTTPS request gets.
type httpAnswer struct {
	code     int           // status code; 0 with hang
	hang     bool          // never answer
	delay    time.Duration // wait before answering
	location string        // Location header of a redirect
}

func (a httpAnswer) String() string {
	switch {
	case a.hang:
		return "hang"
	case a.location != "":
		return fmt.Sprintf("%d %s", a.code, a.location)
	case a.delay > 0:
		return fmt.Sprintf("%d after %s", a.code, a.delay)
	}
	return strconv.Itoa(a.code)
}

// grpcAnswer is what a health Check gets: a status, the NotFound error,
// or no answer.
type grpcAnswer struct {
	status   healthpb.HealthCheckResponse_ServingStatus
	notFound bool
	hang     bool
}

func (a grpcAnswer) String() string {
	switch {
	case a.hang:
		return "hang"
	case a.notFound:
		return "NOT_FOUND"
	}
	return a.status.String()
}

// readState reads path; a missing file is the empty state. Lines that do
// not parse are left out and returned as errors.
func readState(path string) (state, []error) {
	if path == "" {
		return state{}, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return state{}, nil
	}
	if err != nil {
		return state{}, []error{err}
	}
	return parseState(string(b), path)
}

// parseState parses the state file's text (name is for errors).
func parseState(text, name string) (state, []error) {
	s := state{}
	var errs []error
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if err := checkLine(key, value, ok); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %q: %w", name, i+1, line, err))
			continue
		}
		s[key] = value
	}
	return s, errs
}

// checkLine validates one key=value line.
func checkLine(key, value string, hasEquals bool) error {
	if !hasEquals {
		return errors.New("want key=value")
	}
	endpoint, sub, hasSub := strings.Cut(key, ":")
	var err error
	switch endpoint {
	case "http", "https":
		if hasSub && !strings.HasPrefix(sub, "/") {
			return fmt.Errorf("path %q does not start with /", sub)
		}
		_, err = parseHTTP(value)
	case "tcp":
		if hasSub {
			return errors.New("tcp takes no :qualifier")
		}
		if value != "open" && value != "closed" {
			err = errors.New("want open or closed")
		}
	case "grpc":
		if hasSub && sub == "" {
			return errors.New("empty service name")
		}
		_, err = parseGRPC(value)
	default:
		return fmt.Errorf("unknown endpoint %q (want http, https, tcp or grpc)", endpoint)
	}
	return err
}

// lookup returns the value of endpoint:sub, else of endpoint, else "".
func (s state) lookup(endpoint, sub string) string {
	if v, ok := s[endpoint+":"+sub]; ok {
		return v
	}
	return s[endpoint]
}

// http returns what a request to path on endpoint ("http" or "https")
// gets.
func (s state) http(endpoint, path string) httpAnswer {
	a, _ := parseHTTP(s.lookup(endpoint, path)) // checked when read
	return a
}

// tcpOpen reports whether the TCP listener should listen.
func (s state) tcpOpen() bool { return s["tcp"] != "closed" }

// grpc returns what a Check of service gets.
func (s state) grpc(service string) grpcAnswer {
	a, _ := parseGRPC(s.lookup("grpc", service)) // checked when read
	return a
}

func parseHTTP(v string) (httpAnswer, error) {
	switch {
	case v == "":
		return httpAnswer{code: 200}, nil
	case v == "hang":
		return httpAnswer{hang: true}, nil
	case strings.HasPrefix(v, "delay:"):
		d, err := time.ParseDuration(strings.TrimPrefix(v, "delay:"))
		if err != nil || d < 0 {
			return httpAnswer{code: 200}, fmt.Errorf("bad delay: %v", err)
		}
		return httpAnswer{code: 200, delay: d}, nil
	case strings.HasPrefix(v, "redirect:"):
		loc := strings.TrimPrefix(v, "redirect:")
		if u, err := url.Parse(loc); err != nil || loc == "" || u.Scheme == "" && !strings.HasPrefix(loc, "/") {
			return httpAnswer{code: 200}, errors.New("want redirect:<absolute URL or /path>")
		}
		return httpAnswer{code: 302, location: loc}, nil
	}
	code, err := strconv.Atoi(v)
	if err != nil || code < 200 || code > 599 {
		return httpAnswer{code: 200}, errors.New("want a status code 200-599, hang, delay:<duration> or redirect:<url>")
	}
	return httpAnswer{code: code}, nil
}

func parseGRPC(v string) (grpcAnswer, error) {
	switch v {
	case "":
		return grpcAnswer{status: healthpb.HealthCheckResponse_SERVING}, nil
	case "hang":
		return grpcAnswer{hang: true}, nil
	case "NOT_FOUND":
		return grpcAnswer{notFound: true}, nil
	}
	st, ok := healthpb.HealthCheckResponse_ServingStatus_value[v]
	if !ok {
		return grpcAnswer{status: healthpb.HealthCheckResponse_SERVING}, errors.New("want SERVING, NOT_SERVING, UNKNOWN, SERVICE_UNKNOWN, NOT_FOUND or hang")
	}
	return grpcAnswer{status: healthpb.HealthCheckResponse_ServingStatus(st)}, nil
}
