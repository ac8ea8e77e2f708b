// Package modeltest checks steadywatch's guarantees against a model: it
// generates random histories of writes and server faults, plays each one on
// in-memory apiservers (steadywatchtest) and runs five clients side by side
// on it, one server each:
//
//   - "stock": client-go's cache.NewSharedIndexInformer over a plain
//     cache.ListWatch;
//   - "dropin": the same informer over lister.NewListerWatcher (the drop-in
//     adoption path);
//   - "reflector": reflector.New over a cache.Store, on a fake clock. Its
//     lists fill the store object by object; each object is checked as it
//     is applied, each deletion at a list's end must be of a version the
//     server ended, and a run of the default size must see relists that
//     delete objects (deletions delivered over the object-by-object relist);
//   - "wire": reflector.New over lister.FromClientset, talking HTTP to a
//     front (httptest) that serves its server as a kube-apiserver does (JSON
//     lists, chunked watch streams, errors as Status with their code), so
//     its lists are decoded by the SDK and applied object by object as they
//     are decoded (lister.ItemByItem), a list in one response included. The
//     front holds back the end of each such list until one of its objects
//     reached the store: a list read whole is a violation, and a run in
//     which no list was applied item by item fails;
//   - "informer": steadywatch's informer (reflector.NewSharedIndexInformerWithOptions)
//     with the checker's handlers, so every handler call (a relist's
//     per-object adds, updates and tombstoned deletes included) is checked
//     against the history.
//
// After every change a client makes to its cache it checks that no object is
// older than the version already held (Kubernetes API Concepts, "Resource
// versions": resourceVersions of one object only grow), that a deleted
// object never reappears from an event older than its deletion, and that
// nothing outside the label selector or namespace is held. After the last
// fault, each cache must equal the server's state within a stated bound, the
// requests a client sent (from the server's own request log) must not exceed
// stock client-go's by more than a small constant, and no client may send
// requests in a loop without a delay (an absolute bound per second, which
// stock client-go is held to as well).
//
// A failing history is shrunk to a minimal one and printed as a Go table
// literal for regression_test.go. The package has only tests; run
//
//	go test ./internal/modeltest -run TestModel -v
//
// and see model_test.go for the flags and environment variables (random stream,
// number of histories, duration) that replay or lengthen a run.
package modeltest
