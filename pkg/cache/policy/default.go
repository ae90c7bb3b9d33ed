package policy

// New returns the default policy, named "locus": W-TinyLFU whose window size
// a tuner picks by miniature simulation (see doc.go). It holds at most
// capacity keys. seed selects the hash functions of the frequency sketches,
// of the key index and of the tuner's sample, and seeds the random generator
// that breaks admission contests: the same seed and access sequence give the
// same decisions. It returns ErrCapacity when capacity < 1 or > MaxCapacity.
func New(capacity int, seed uint64) (Policy, error) {
	if capacity < 1 || capacity > MaxCapacity {
		return nil, capacityError(capacity)
	}
	p := newTinyLFU(capacity, seed, tunerWindows[initialWindow])
	p.tuner = newTuner(capacity, seed)
	if p.tuner.full {
		// Every key is sampled: the live policy counts in the shadows'
		// sketch, which the tuner increments once per access.
		p.freq, p.counts = p.tuner.freq, false
	}
	return p, nil
}
