package harness

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// compactRevKey is the etcd key kube-apiserver's compactor uses as its
// lease/clock: its value is the last compacted revision, its version the
// "compact time". See k8s.io/apiserver/pkg/storage/etcd3/compact.go.
const compactRevKey = "compact_rev_key"

// etcdReadyTimeout bounds how long an embedded etcd may take to be ready.
const etcdReadyTimeout = 30 * time.Second

// Etcd is an embedded, in-process etcd (go.etcd.io/etcd/server/v3/embed)
// listening on 127.0.0.1 free ports. Stop and Start keep its data directory
// and ports, so apiservers pointed at it reconnect.
type Etcd struct {
	dir       string // data dir
	logPath   string
	clientURL url.URL
	peerURL   url.URL
	progress  func(format string, args ...any)
	mu        sync.Mutex
	server    *embed.Etcd
	client    *clientv3.Client
	compactMu sync.Mutex // serialises Compact
}

func newEtcd(dir string, progress func(string, ...any)) (*Etcd, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	return &Etcd{
		dir:       filepath.Join(dir, "etcd-data"),
		logPath:   filepath.Join(dir, "etcd.log"),
		clientURL: url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(ports[0])},
		peerURL:   url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(ports[1])},
		progress:  progress,
	}, nil
}

// Endpoint is the client URL, e.g. "http://127.0.0.1:40123".
func (e *Etcd) Endpoint() string { return e.clientURL.String() }

// DataDir is etcd's data directory.
func (e *Etcd) DataDir() string { return e.dir }

// Start starts etcd (again) with the same data directory and ports and waits
// until it serves. Starting a running etcd is a no-op.
func (e *Etcd) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.server != nil {
		return nil
	}
	start := time.Now()
	cfg := embed.NewConfig()
	cfg.Name = "steadywatch-e2e"
	cfg.Dir = e.dir
	cfg.ListenClientUrls = []url.URL{e.clientURL}
	cfg.AdvertiseClientUrls = []url.URL{e.clientURL}
	cfg.ListenPeerUrls = []url.URL{e.peerURL}
	cfg.AdvertisePeerUrls = []url.URL{e.peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{e.logPath}
	// Test data: durability across a machine crash is irrelevant, speed is not.
	cfg.UnsafeNoFsync = true

	srv, err := embed.StartEtcd(cfg)
	if err != nil {
		return e.err("start", err)
	}
	timer := time.NewTimer(etcdReadyTimeout)
	defer timer.Stop()
	select {
	case <-srv.Server.ReadyNotify():
	case err := <-srv.Err():
		srv.Close()
		return e.err("start", fmt.Errorf("%w: %v", ErrExited, err))
	case <-timer.C:
		srv.Close()
		return e.err("ready", fmt.Errorf("%w: not ready after %s", ErrNotReady, etcdReadyTimeout))
	case <-ctx.Done():
		srv.Close()
		return e.err("start", ctx.Err())
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{e.clientURL.String()},
		DialTimeout: 5 * time.Second,
		Logger:      srv.GetLogger(),
	})
	if err != nil {
		srv.Close()
		return e.err("client", err)
	}
	e.server, e.client = srv, cli
	e.progress("etcd ready at %s in %s", e.Endpoint(), time.Since(start).Round(time.Millisecond))
	return nil
}

// Stop stops etcd, keeping its data. Stopping a stopped etcd is a no-op.
func (e *Etcd) Stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.server == nil {
		return nil
	}
	var errs []error
	if err := e.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
		errs = append(errs, err)
	}
	e.server.Close()
	e.server, e.client = nil, nil
	if err := errors.Join(errs...); err != nil {
		return e.err("stop", err)
	}
	return nil
}

func (e *Etcd) cli() (*clientv3.Client, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client == nil {
		return nil, e.err("client", ErrStopped)
	}
	return e.client, nil
}

// Revision returns etcd's current revision (what an apiserver reports as the
// newest resourceVersion).
func (e *Etcd) Revision(ctx context.Context) (int64, error) {
	cli, err := e.cli()
	if err != nil {
		return 0, err
	}
	resp, err := cli.Get(ctx, compactRevKey, clientv3.WithCountOnly())
	if err != nil {
		return 0, e.err("revision", err)
	}
	return resp.Header.Revision, nil
}

// compactAttempts bounds Compact's compare-and-swap retries when another
// compactor (an apiserver's) moves compact_rev_key concurrently.
const compactAttempts = 5

// Compact compacts etcd so that every revision that existed before the call
// is unavailable, and records the compaction the way kube-apiserver's own
// compactor does (k8s.io/apiserver/pkg/storage/etcd3/compact.go): a
// transaction that, if compact_rev_key's version is still the one read,
// writes the compacted revision into compact_rev_key (incrementing its
// version, the apiserver compactors' shared clock), then compacts at that
// revision. Apiservers watching compact_rev_key (1.31+ with
// ListFromCacheSnapshot) thereby learn of the compaction, so their watch cache
// stops serving snapshots older than it.
//
// The returned rev is the compaction revision: the revision written by the
// bookkeeping put itself. Reads at rev still succeed; reads at any revision
// below it (in particular every resourceVersion observed before the call) get
// "required revision has been compacted", which apiservers serve as 410 Gone.
func (e *Etcd) Compact(ctx context.Context) (rev int64, err error) {
	e.compactMu.Lock()
	defer e.compactMu.Unlock()
	cli, err := e.cli()
	if err != nil {
		return 0, err
	}
	for attempt := 1; attempt <= compactAttempts; attempt++ {
		get, err := cli.Get(ctx, compactRevKey)
		if err != nil {
			return 0, e.err("compact", err)
		}
		var version int64
		if len(get.Kvs) > 0 {
			version = get.Kvs[0].Version
		}
		// The put below is the next write if nobody else writes in between:
		// it happens at current+1. If someone does, target is still <= the
		// put's revision, so compacting at it is valid and every revision
		// observed before this call (<= current) is below it.
		target := get.Header.Revision + 1
		txn, err := cli.Txn(ctx).If(
			clientv3.Compare(clientv3.Version(compactRevKey), "=", version),
		).Then(
			clientv3.OpPut(compactRevKey, strconv.FormatInt(target, 10)),
		).Else(
			clientv3.OpGet(compactRevKey),
		).Commit()
		if err != nil {
			return 0, e.err("compact", err)
		}
		if !txn.Succeeded {
			// Another compactor won the CAS; re-read and try again.
			continue
		}
		if _, err := cli.Compact(ctx, target, clientv3.WithCompactPhysical()); err != nil {
			return 0, e.err("compact", err)
		}
		e.progress("etcd compacted at revision %d", target)
		return target, nil
	}
	return 0, e.err("compact", fmt.Errorf("compact_rev_key changed concurrently %d times", compactAttempts))
}

func (e *Etcd) err(op string, err error) error {
	return &ComponentError{Component: "etcd", Op: op, LogPath: e.logPath, LogTail: tailFile(e.logPath, 20), Err: err}
}

// tailFile returns the last n lines of path ("" if unreadable). It reads at
// most the last 64 KiB.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 64 << 10
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := st.Size() - max
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil || len(buf) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if off > 0 && len(lines) > 1 {
		lines = lines[1:] // first line is probably partial
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}
