package membership

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"os"
)

// maxKeyFileSize bounds what ReadKeyFile reads: a key file is tiny, and a
// path pointing at something large (a log, a device) should fail fast.
const maxKeyFileSize = 4096

// ReadKeyFile reads a gossip encryption key (see ParseKey for the format).
// Errors wrap ErrKeyFile (cannot read, with the path and the OS error) or
// ErrKeyLength.
func ReadKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot open %q: %w", ErrKeyFile, path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: cannot read %q: %w", ErrKeyFile, path, err)
	}
	if len(data) > maxKeyFileSize {
		return nil, fmt.Errorf("%w: %q is larger than %d bytes; it is not a key file", ErrKeyLength, path, maxKeyFileSize)
	}
	key, err := ParseKey(data)
	if err != nil {
		return nil, fmt.Errorf("%w (key file %q)", err, path)
	}
	return key, nil
}

// ParseKey turns the contents of a key file into an AES key for memberlist's
// gossip encryption (AES-GCM; 16, 24 or 32 bytes select AES-128, -192, -256).
//
// The rule:
//  1. If the content, surrounding whitespace trimmed, is valid standard
//     base64 (padded, as `head -c 32 /dev/urandom | base64` writes it), it
//     is a base64 key and must decode to 16, 24 or 32 bytes. It is never
//     reinterpreted as raw bytes: a 16-character base64 text of a 10-byte
//     key is an error, not a raw AES-128 key.
//  2. Otherwise the raw content, untrimmed, is the key and must be 16, 24 or
//     32 bytes long (`head -c 32 /dev/urandom > key`). A raw key that
//     happens to be valid base64 text (say, 16 ASCII letters) is read as
//     base64 by rule 1; write raw keys as random bytes, or use base64.
//
// Anything else is an error wrapping ErrKeyLength. Every member must use the
// same key; members with different keys cannot read each other's gossip and
// Join fails with ErrJoin.
func ParseKey(data []byte) ([]byte, error) {
	text := bytes.TrimSpace(data)
	if len(text) > 0 {
		if dec, err := base64.StdEncoding.DecodeString(string(text)); err == nil {
			if !validKeyLen(len(dec)) {
				return nil, fmt.Errorf("%w: the base64 text decodes to %d bytes", ErrKeyLength, len(dec))
			}
			return dec, nil
		}
	}
	if !validKeyLen(len(data)) {
		return nil, fmt.Errorf("%w: got %d raw bytes (and not base64 text); generate a key with `head -c 32 /dev/urandom | base64`", ErrKeyLength, len(data))
	}
	return append([]byte(nil), data...), nil
}

func validKeyLen(n int) bool { return n == 16 || n == 24 || n == 32 }
