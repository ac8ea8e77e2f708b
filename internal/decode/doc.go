// Package decode reads what an apiserver answers a list or a watch with, in
// fewer passes and less memory than client-go's own decoding, with the same
// result: a list response body item by item as it arrives (List,
// Unstructured), with a transform applied to each item before the next is
// read, and a dynamic client's JSON watch events (FastJSONWatch). Every
// byte it reads is the server's and untrusted.
//
// It is the decoding machinery of package lister's client adapters, which
// send the requests; it opens no connection of its own.
package decode
