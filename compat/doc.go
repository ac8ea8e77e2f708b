// Package compat knows what an apiserver really does: it parses /version into
// Capabilities and records observed behaviour (which outranks the version
// string), cached per server with expiry, so the lister and reflector pick the
// cheap path on current servers and never wait for what an old server cannot send.
//
// It is not a list or watch implementation; see package lister.
package compat
