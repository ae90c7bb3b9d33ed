package origin

import "github.com/locuscache/locus/pkg/objuri"

// URI schemes understood by this package (objuri's).
const (
	SchemeS3   = objuri.SchemeS3
	SchemeFile = objuri.SchemeFile
)

// URI is a parsed object URI (or listing prefix): objuri.URI.
type URI = objuri.URI

// Scheme returns the scheme of a URI string: objuri.Scheme.
func Scheme(uri string) (string, error) { return objuri.Scheme(uri) }

// ParseURI parses an object URI or a listing prefix: objuri.Parse. Errors
// wrap ErrInvalidURI, ErrOutsideRoot or ErrUnsupportedScheme.
func ParseURI(s string) (URI, error) { return objuri.Parse(s) }
