// Package listgate bounds how many collection reads (lists and streaming
// lists) the informers, reflectors and listers of a process have in flight
// against one apiserver, and serves identical list requests with one
// request.
//
// Informers that start together otherwise cost the apiserver the sum of
// their lists: it allocates about the size of each list's response to
// encode it, and that garbage raises its heap until its next collection
// (the KEP-3157 scenario). Through one shared Gate their reads reach the
// server one (or a few) at a time, and identical ones are answered once.
//
// A Gate is set as lister.Options.ListGate (reflector.Options.Lister.ListGate,
// and reflector.NewSharedInformerFactoryWithOptions' lister.Options); the lister and the reflector
// call it. It is not a rate limiter (requests are never sent faster because
// of a gate, and no fallback is taken because of one), and it does not
// retry: a reader whose shared request failed sends its own.
package listgate
