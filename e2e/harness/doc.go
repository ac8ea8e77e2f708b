// Package harness runs real Kubernetes control planes for steadywatch's e2e
// suite: an in-process embedded etcd and one or two kube-apiserver processes
// (a built binary of a chosen version), with a throw-away PKI, a token for a
// system:masters user, a kubeconfig and rest.Configs that keep TLS
// verification on.
//
// It exists so that behaviour the SDK claims (410 after compaction, watch
// cache on/off, HA pairs whose watch caches lag each other, legacy servers
// that ignore resourceVersionMatch) is proven against the real thing. It gives
// tests the handles to provoke those situations: restart an apiserver, stop
// and start etcd, compact etcd the way the apiserver's own compactor does, and
// put a fault-injecting proxy (package faults) in front of apiservers.
//
// It is not a general-purpose cluster: there are no controllers, scheduler,
// kubelets or admission webhooks, everything listens on 127.0.0.1 only, and
// the credentials are for tests. It is not imported by the SDK; it lives in
// the separate e2e module so SDK users never inherit its dependencies.
//
// Every process the harness starts is placed in its own process group, killed
// on Stop, and carries a parent-death signal so a crashed test leaves no
// orphan apiserver behind.
package harness
