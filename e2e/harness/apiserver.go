package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

const (
	// stopGrace is how long an apiserver gets to exit after SIGTERM before
	// its process group is SIGKILLed.
	stopGrace = 15 * time.Second
	// readyPoll is the /readyz polling period.
	readyPoll = 100 * time.Millisecond
	// logTailLines is how many log lines a ComponentError carries.
	logTailLines = 30
)

// APIServer is one kube-apiserver process of a Cluster. Stop, Start and
// Restart keep its port, serving certificate, flags and (through etcd) its
// data, so clients configured with RESTConfig keep working across restarts.
type APIServer struct {
	name         string
	version      string
	binary       string
	args         []string
	port         int
	logPath      string
	workDir      string
	readyTimeout time.Duration
	progress     func(string, ...any)
	config       *rest.Config // base config; handed out as copies
	httpClient   *http.Client // for /readyz and /metrics

	mu   sync.Mutex
	proc *process // nil when stopped
}

// process is one run of a child process.
type process struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed when the process has exited
	err  error         // cmd.Wait's result, valid after done
}

// Name is the server's name in logs and errors, e.g. "apiserver-0".
func (a *APIServer) Name() string { return a.name }

// URL is the server's https URL, e.g. "https://127.0.0.1:40125".
func (a *APIServer) URL() string { return a.config.Host }

// Version is the kube-apiserver version this server runs, e.g. "v1.37.2".
func (a *APIServer) Version() string { return a.version }

// LogPath is the file the server's stdout and stderr go to (appended to
// across restarts).
func (a *APIServer) LogPath() string { return a.logPath }

// Args returns a copy of the server's command-line flags.
func (a *APIServer) Args() []string { return append([]string(nil), a.args...) }

// RESTConfig returns a copy of a config that talks to this server directly:
// bearer token of a system:masters user, the cluster CA, TLS verification on.
func (a *APIServer) RESTConfig() *rest.Config { return rest.CopyConfig(a.config) }

// Running reports whether the process is running (it may not be ready).
func (a *APIServer) Running() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc == nil {
		return false
	}
	select {
	case <-a.proc.done:
		return false
	default:
		return true
	}
}

// Start starts the server and waits until /readyz answers 200, up to the
// cluster's ReadyTimeout. Starting a running server is a no-op. On failure the
// process is killed and the error (a *ComponentError) carries its log tail.
func (a *APIServer) Start(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc != nil {
		select {
		case <-a.proc.done:
			a.reapLocked()
		default:
			return nil
		}
	}
	begin := time.Now()
	logf, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return a.err("start", err)
	}
	fmt.Fprintf(logf, "=== harness: starting %s %s at %s\n", a.name, a.version, begin.Format(time.RFC3339Nano))
	cmd := exec.Command(a.binary, a.args...)
	cmd.Dir = a.workDir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	p, err := startProcess(cmd)
	if err != nil {
		logf.Close()
		return a.err("start", err)
	}
	p.log = logf
	a.proc = p
	if err := a.waitReady(ctx, p); err != nil {
		a.stopLocked()
		return err
	}
	a.progress("%s %s ready at %s in %s", a.name, a.version, a.URL(), time.Since(begin).Round(time.Millisecond))
	return nil
}

// startProcess starts cmd from a goroutine locked to its OS thread, and keeps
// that thread alive until the child exits: Pdeathsig fires when the *thread*
// that forked the child exits, so it must not be a thread the Go runtime
// might retire.
func startProcess(cmd *exec.Cmd) (*process, error) {
	p := &process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

func (a *APIServer) waitReady(ctx context.Context, p *process) error {
	deadline := time.NewTimer(a.readyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	var last error
	for {
		code, err := a.get(ctx, "/readyz", 2*time.Second, nil)
		if err == nil && code == http.StatusOK {
			return nil
		}
		if err != nil {
			last = err
		} else {
			last = fmt.Errorf("/readyz answered %d", code)
		}
		select {
		case <-p.done:
			return a.err("start", fmt.Errorf("%w before ready: %v", ErrExited, p.err))
		case <-deadline.C:
			return a.err("ready", fmt.Errorf("%w within %s: last: %v", ErrNotReady, a.readyTimeout, last))
		case <-ctx.Done():
			return a.err("start", ctx.Err())
		case <-tick.C:
		}
	}
}

// get GETs path on the server; if body is non-nil the response body is
// copied into it. It returns the status code.
func (a *APIServer) get(ctx context.Context, path string, timeout time.Duration, body io.Writer) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.config.Host+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := a.httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if body == nil {
		body = io.Discard
	}
	if _, err := io.Copy(body, resp.Body); err != nil {
		return resp.StatusCode, err
	}
	return resp.StatusCode, nil
}

// Metrics returns the server's /metrics text (Prometheus exposition format),
// e.g. to read apiserver_request_total or etcd_requests_total.
func (a *APIServer) Metrics(ctx context.Context) (string, error) {
	var b strings.Builder
	code, err := a.get(ctx, "/metrics", 30*time.Second, &b)
	if err != nil {
		return "", a.err("metrics", err)
	}
	if code != http.StatusOK {
		return "", a.err("metrics", fmt.Errorf("/metrics answered %d", code))
	}
	return b.String(), nil
}

// Stop stops the server: SIGTERM to its process group, SIGKILL after 15 s.
// Stopping a stopped server is a no-op.
func (a *APIServer) Stop() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopLocked()
}

// Restart stops and starts the server: same etcd and data, same port and
// flags; it returns once /readyz is 200 again.
func (a *APIServer) Restart(ctx context.Context) error {
	if err := a.Stop(); err != nil {
		return err
	}
	return a.Start(ctx)
}

// Pause freezes the server's process group (SIGSTOP) without stopping it:
// its connections stay open, but it serves nothing and its watch cache
// receives no etcd events until Resume. Requests sent meanwhile wait in the
// kernel and are served after Resume, which is how a test gets a real
// lagging watch cache behind a balancer. It fails with ErrStopped when the
// server is not running. Stop also works on a paused server.
func (a *APIServer) Pause() error { return a.signal("pause", syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT). Resuming a server that is
// not paused is a no-op; it fails with ErrStopped when the server is not running.
func (a *APIServer) Resume() error { return a.signal("resume", syscall.SIGCONT) }

func (a *APIServer) signal(op string, sig syscall.Signal) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc == nil {
		return a.err(op, ErrStopped)
	}
	select {
	case <-a.proc.done:
		return a.err(op, ErrExited)
	default:
	}
	if err := syscall.Kill(-a.proc.cmd.Process.Pid, sig); err != nil {
		return a.err(op, err)
	}
	return nil
}

func (a *APIServer) stopLocked() error {
	p := a.proc
	if p == nil {
		return nil
	}
	pid := p.cmd.Process.Pid
	select {
	case <-p.done:
	default:
		// The child is its own process-group leader (Setpgid), so -pid
		// signals it and anything it spawned. SIGCONT after SIGTERM lets a
		// paused server handle the SIGTERM.
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		_ = syscall.Kill(-pid, syscall.SIGCONT)
		t := time.NewTimer(stopGrace)
		select {
		case <-p.done:
			t.Stop()
		case <-t.C:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-p.done
		}
	}
	a.reapLocked()
	return nil
}

// reapLocked forgets an exited process. Its exit status is not an error:
// the harness only stops servers by signal.
func (a *APIServer) reapLocked() {
	if a.proc != nil && a.proc.log != nil {
		fmt.Fprintf(a.proc.log, "=== harness: %s exited: %v\n", a.name, a.proc.err)
		a.proc.log.Close()
	}
	a.proc = nil
}

func (a *APIServer) err(op string, err error) error {
	return &ComponentError{Component: a.name, Op: op, LogPath: a.logPath, LogTail: tailFile(a.logPath, logTailLines), Err: err}
}

// apiServerArgs are the flags every supported minor accepts, plus the
// version-specific ones from versionTable, plus the caller's extras (last, so
// they win where kube-apiserver takes the last value).
type apiServerFlags struct {
	etcd               string
	port               int
	certDir            string
	certFile, keyFile  string
	saPub, saKey       string
	tokenFile          string
	compactionInterval time.Duration
	disableWatchCache  bool
	extra              []string
}

func apiServerArgs(version string, f apiServerFlags) ([]string, error) {
	vflags, err := versionFlags(version)
	if err != nil {
		return nil, err
	}
	args := []string{
		"--etcd-servers=" + f.etcd,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(f.port),
		"--cert-dir=" + f.certDir,
		"--tls-cert-file=" + f.certFile,
		"--tls-private-key-file=" + f.keyFile,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + f.saPub,
		"--service-account-signing-key-file=" + f.saKey,
		"--token-auth-file=" + f.tokenFile,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--disable-admission-plugins=ServiceAccount",
		// No writes behind the tests' back: two servers on one etcd would
		// otherwise keep rewriting the "kubernetes" Endpoints object with
		// their own ports, moving the revision.
		"--endpoint-reconciler-type=none",
		"--etcd-compaction-interval=" + f.compactionInterval.String(),
		"--profiling=false",
	}
	if f.disableWatchCache {
		args = append(args, "--watch-cache=false")
	}
	args = append(args, vflags...)
	args = append(args, f.extra...)
	return args, nil
}
