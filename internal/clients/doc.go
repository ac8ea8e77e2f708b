// Package clients holds the SDK's own list/watch clients: a typed
// clientset's (found from an example object), a generated clientset's REST
// client, a dynamic and a metadata client. Each sends the request client-go's
// own client would send, once (no retry inside client-go's REST client), and
// decodes list responses item by item as they arrive (package
// internal/decode), with a transform applied to each item when it is given
// one. Every client names its list request for a listgate.Gate.
//
// Users reach them through package lister (FromClientset, FromRESTClient,
// FromDynamicConfig, FromMetadataConfig), which documents them and returns
// its own error types for theirs.
package clients
