// Package faults is a fault-injecting HTTPS reverse proxy and load balancer
// that sits in front of one or more real kube-apiservers in the e2e harness.
//
// It speaks what the apiserver speaks (TLS with h2 and http/1.1 ALPN,
// immediately flushed watch streams, Status error bodies and watch ERROR events
// in the negotiated JSON or protobuf encoding), so that client-go, informers
// and this SDK cannot tell it is there. On top of plain forwarding it can
//
//   - answer matching requests with an apiserver-shaped error (Inject, Rule):
//     410 Expired, 429 with Retry-After, 504 ResourceVersionTooLarge, and a 410
//     delivered as a watch ERROR event inside an HTTP 200 stream;
//   - strip query parameters to emulate a server that ignores them
//     (StripParams), e.g. resourceVersionMatch or sendInitialEvents;
//   - abort or stall in-flight watch streams (DropWatches, StallWatches);
//   - change watch streams event by event, as proxies and aggregated APIs in
//     the field have (SetStreamFaults): drop bookmarks, strip the
//     k8s.io/initial-events-end annotation, cut a streaming list right before
//     its end bookmark or close it right after, and expire that bookmark's
//     resourceVersion; answer watches 200 with no event (Rule.EmptyWatch);
//     hold requests without any answer (Rule.Stall) or reset their
//     connection (Rule.Reset); send any Retry-After header (Rule.RetryAfter);
//   - lie in the data itself: rewrite plain bookmarks' resourceVersion
//     (StreamFaults.BookmarkRV, and end the watch after it:
//     EndAfterBookmarkRV), re-deliver an object's older MODIFIED after
//     a newer one (StreamFaults.RedeliverOlder), repeat the continue token
//     a list request carried in its answer (ListFaults.RepeatContinueToken);
//   - route between several backends (Pin, Alternate, Failover), e.g. to
//     reproduce an HA pair whose watch caches lag each other;
//   - record every request as received and as forwarded (Requests).
//
// It is for tests, chaos runs and benchmarks on a developer machine. It is not
// a production proxy: it listens on loopback only, it terminates TLS (so the
// client's own certificate is not forwarded; authenticate to the backends with
// a bearer token, which is forwarded unchanged), and it does not proxy
// protocol upgrades (exec, attach, port-forward, websocket watches).
package faults
