package pub

import (
	"example.com/mod/internal/in"
)

// A fixture of every rule of the count (main_test.go lists what it must
// find): exported functions, types, aliases, constants, variables and
// methods of exported types are names; f, u.Exported, T.m, c3 and w are not.

func F(o Options, d Data, h Handle, v Value) {}
func f()                                     {}

func NewThing(d Data, h Handle, v Value) {}

func Parse() Value { return Value{} }

type T struct{ A, b int }

func (T) M()  {}
func (*T) P() {}
func (T) m()  {}

type G[K comparable] struct{}

func (*G[K]) Q() {}

type u struct{}

func (u) Exported() {}

type Alias = in.Opts

const (
	C1, C2 = 1, 2
	c3     = 3
)

var V, w int

// Options is an option struct by its name; Policy, Embedded and in.Opts
// by being held in it; Alias is not (its name says nothing), GuardOptions
// is (by name, measured by its target's fields).
type Options struct {
	Policy  Policy
	Gate    *Handle
	Inner   in.Opts
	private int
	Embedded
}

type Embedded struct{ X int }

type Policy struct{ Max, Min int }

// Handle is taken by a constructor but holds unexported state.
type Handle struct{ n int }

// Data is taken by value by a constructor and returned by nothing.
type Data struct{ One, Two string }

// Value is taken by a constructor but returned by Parse.
type Value struct{ V int }

type GuardOptions = in.Opts
