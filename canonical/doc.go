// Package canonical makes every custom resource an informer sees arrive in
// one shape: the newest shape the controller understands.
//
// The Gateway API versioning guide ("API Versioning") explains why this is
// needed. The apiserver does
// not version stored custom resources: apiVersion names the schema that
// processed the request, not what is stored, and with
// x-kubernetes-preserve-unknown-fields every stored field comes back whatever
// version is requested. A controller therefore cannot learn from apiVersion
// which shape an object is in. It must recognise the shape from the object's
// content, canonicalize older shapes to its own, never write the converted
// object back, and ignore shapes newer than it supports.
//
// The package has two parts:
//
//   - A [Chain]: named shapes ordered oldest to newest, each with a
//     [Recognizer] that decides from content (fields present, not apiVersion)
//     whether an object is in that shape, and an Upgrade conversion to the
//     next shape (plus an optional Downgrade back, which the Gateway API versioning guide requires
//     within experimental channels). One shape is the canonical one; shapes
//     after it are known to exist but are not supported, so objects in them
//     are rejected as newer. [Chain.Canonicalize] converts one object;
//     [Chain.RoundTrip] checks bidirectional conversions on samples.
//   - [Wrap]: a client-go cache.ListerWatcher decorator that runs the chain on
//     every list item and every watch event, so the store and every handler
//     see only the canonical shape. Objects that cannot be canonicalized (a
//     newer shape, no recogniser claims them, a conversion failed or
//     panicked) never crash the informer: they are logged with their reason
//     and counted, and then skipped or passed through unchanged according to
//     [Options.PassThrough]. See [Wrap] for the exact event rules.
//
// What it is not: a conversion webhook, a storage migrator or a client that
// writes. Nothing in this package sends a request of its own; the decorator
// only transforms what the wrapped ListerWatcher returns, in memory, on deep
// copies. It works on *unstructured.Unstructured objects (the dynamic client)
// and depends only on client-go interfaces, so it stacks on any
// cache.ListerWatcher, for example steadywatch's lister:
//
//	lw := canonical.Wrap(lister.New(client, lister.Options{}).ListerWatcher(), chain, canonical.Options{})
//
// Objects in an informer's store are canonicalized views. Do not Update them
// back to the server: that would rewrite the stored custom resource, which
// the Gateway API versioning guide forbids ("MUST NOT change the CRs themselves").
package canonical
