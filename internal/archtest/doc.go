// Package archtest holds the SDK's architecture tests: docs/design.md's
// package diagram against the imports the Go toolchain reports. It has no
// code of its own.
package archtest
