package policy

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// MaxCapacity is the largest capacity a policy accepts (node indexes are
// 32-bit).
const MaxCapacity = 1 << 30

// ErrCapacity is returned by the constructors for a capacity below 1 or above
// MaxCapacity.
var ErrCapacity = errors.New("policy: capacity must be between 1 and 2^30")

// ErrUnknownPolicy is returned by ByName for a name it does not know.
var ErrUnknownPolicy = errors.New("policy: unknown policy")

func capacityError(c int) error {
	return fmt.Errorf("%w (got %d)", ErrCapacity, c)
}

// DefaultName is the name of the default policy, the one New returns.
const DefaultName = "locus"

// constructors maps each name ByName accepts to its constructor.
var constructors = map[string]func(capacity int, seed uint64) (Policy, error){
	DefaultName: New,
	"lru":       func(c int, _ uint64) (Policy, error) { return NewLRU(c) },
}

// Names lists the names ByName accepts, sorted.
func Names() []string {
	names := make([]string, 0, len(constructors))
	for n := range constructors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ByName returns the policy called name ("locus" for the default policy,
// "lru" for the baseline) with the given capacity and seed (ignored by
// policies without randomness). It returns ErrUnknownPolicy for another name
// and ErrCapacity for a capacity below 1.
func ByName(name string, capacity int, seed uint64) (Policy, error) {
	c, ok := constructors[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownPolicy, name, strings.Join(Names(), ", "))
	}
	return c(capacity, seed)
}
