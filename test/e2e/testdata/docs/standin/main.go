// The Go runtime's reading of the cgroup CPU quota (pread64, which the
// docs' fine-grained.json does not allow) is turned off, as in the Go
// that built http-echo 1.0.

//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0

// Command standin plays the programs of the images the Kubernetes
// documentation's example pods name, so TestDocsExamples can run those
// manifests unmodified with no registry: one static binary, copied into
// each stand-in image under the program's own path.
//
//	/http-echo -text=TEXT [-listen=:5678]
//
// as hashicorp/http-echo: answers every HTTP request with TEXT and a
// newline. It uses raw socket syscalls and no Go network poller, so it
// runs under the docs' fine-grained.json seccomp profile (written for
// http-echo's syscalls, which has pipe2 but not the eventfd2 a newer Go
// poller needs).
//
//	nginx -g 'daemon off;'
//
// as the nginx image's command: a master process titled "nginx: master
// process nginx -g daemon off;" that listens on port 80 and runs one
// worker, "nginx: worker process", as UID 101; SIGHUP starts a new worker
// and stops the old one, as nginx reloads; SIGQUIT, SIGTERM or SIGINT
// stop the workers and the master.
package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const (
	masterTitle = "nginx: master process "
	workerTitle = "nginx: worker process"
	nginxUID    = 101
)

func main() {
	var err error
	switch arg0 := os.Args[0]; {
	case strings.HasPrefix(arg0, masterTitle):
		err = master()
	case arg0 == workerTitle:
		err = worker()
	case filepath.Base(arg0) == "nginx":
		// The process title is argv[0]: run again under nginx's (from
		// the same file, so the command name stays "nginx").
		err = syscall.Exec(self(), []string{masterTitle + strings.Join(os.Args, " ")}, os.Environ())
	case filepath.Base(arg0) == "http-echo":
		err = httpEcho(os.Args[1:])
	default:
		err = fmt.Errorf("run as /http-echo or nginx, not %q", arg0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// httpEcho serves text on the listen address until killed.
func httpEcho(args []string) error {
	text, port := "", 5678
	for _, a := range args {
		a = strings.TrimLeft(a, "-")
		switch k, v, _ := strings.Cut(a, "="); k {
		case "text":
			text = v
		case "listen":
			p, err := strconv.Atoi(v[strings.LastIndex(v, ":")+1:])
			if err != nil {
				return fmt.Errorf("-listen %q: %w", v, err)
			}
			port = p
		default:
			return fmt.Errorf("unknown flag %q", a)
		}
	}
	if text == "" {
		return errors.New("missing -text")
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		return fmt.Errorf("setsockopt: %w", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port}); err != nil {
		return fmt.Errorf("bind :%d: %w", port, err)
	}
	if err := syscall.Listen(fd, 16); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	fmt.Fprintf(os.Stderr, "[INFO] server is listening on :%d\n", port)
	body := text + "\n"
	answer := []byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body))
	buf := make([]byte, 4096)
	for {
		c, _, err := syscall.Accept4(fd, syscall.SOCK_CLOEXEC)
		if err == syscall.EINTR || err == syscall.ECONNABORTED {
			continue
		}
		if err != nil {
			return fmt.Errorf("accept: %w", err)
		}
		// One read holds a small request's head; the answer does not
		// depend on it.
		syscall.Read(c, buf)
		syscall.Write(c, answer)
		syscall.Close(c)
	}
}

// self is the program's file.
func self() string {
	p, err := os.Executable()
	if err != nil {
		return "/proc/self/exe"
	}
	return p
}

// master listens on port 80 and keeps one worker, replaced on SIGHUP.
func master() error {
	ln, err := net.Listen("tcp", ":80")
	if err != nil {
		return err
	}
	lf, err := ln.(*net.TCPListener).File()
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGINT)
	w, err := startWorker(lf)
	if err != nil {
		return err
	}
	for s := range sigs {
		if s != syscall.SIGHUP {
			w.Process.Signal(syscall.SIGQUIT)
			w.Wait()
			return nil
		}
		next, err := startWorker(lf)
		if err != nil {
			fmt.Fprintln(os.Stderr, "reload:", err)
			continue
		}
		w.Process.Signal(syscall.SIGQUIT)
		w.Wait()
		w = next
	}
	return nil
}

// startWorker runs a worker serving the listener lf as nginx's user.
func startWorker(lf *os.File) (*exec.Cmd, error) {
	// The worker takes nginx's user itself: a child made with
	// SysProcAttr.Credential changes its IDs while it still shares the
	// master's memory (vfork), which would make the master undumpable,
	// and so closed to the pod's other containers through /proc.
	w := &exec.Cmd{
		Path:       self(),
		Args:       []string{workerTitle},
		ExtraFiles: []*os.File{lf},
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
	}
	return w, w.Start()
}

// worker serves nginx's welcome page, as nginx's user, on the listener
// it was given until SIGQUIT.
func worker() error {
	if err := syscall.Setgroups(nil); err != nil {
		return err
	}
	if err := syscall.Setgid(nginxUID); err != nil {
		return err
	}
	if err := syscall.Setuid(nginxUID); err != nil {
		return err
	}
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGQUIT, syscall.SIGTERM)
	go func() {
		<-sigs
		os.Exit(0)
	}()
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "<h1>Welcome to nginx!</h1>")
	}))
}
