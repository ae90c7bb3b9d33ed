package origin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// FileConfig configures a FileStore.
type FileConfig struct {
	// Root is the only directory file:// URIs may name (the cache node's
	// --origin-file-root). It must exist. URIs may spell paths under Root
	// as given or under its symlink-resolved form.
	Root string
	// SizeMtimeVersions makes a file's version "<size>-<mtime ns>" only,
	// without the inode and ctime (the cache node's
	// --origin-file-version=mtime). Every node of a cluster must compute
	// the same version for a file; a root that each node mounts itself
	// with inode numbers of its own (most FUSE file systems) makes them
	// disagree, and reads between the nodes fail. Such a root needs this,
	// at a cost: a file replaced by one of the same size keeps its
	// version, and old bytes are served, when the replacement lands
	// within one tick of the file clock or keeps the old mtime (rsync -a
	// or -t, cp -p, touch -r: at any time), and so does a file rewritten
	// in place whose mtime is then restored.
	SizeMtimeVersions bool
}

func (c *FileConfig) validate() error {
	if c.Root == "" {
		return errors.New("origin: FileConfig.Root is empty; set the directory file:// URIs may name")
	}
	if !filepath.IsAbs(c.Root) {
		abs, err := filepath.Abs(c.Root)
		if err != nil {
			return fmt.Errorf("origin: cannot make file root %q absolute: %w", c.Root, err)
		}
		c.Root = abs
	}
	c.Root = filepath.Clean(c.Root)
	return nil
}

// FileStore serves file:// URIs from one local directory tree.
//
// Confinement is enforced twice: each path is checked lexically and after
// resolving symbolic links with filepath.EvalSymlinks (errors wrap
// ErrOutsideRoot), and every file is then opened through an os.Root, which
// the kernel-level lookup keeps inside the root even if a link is swapped
// between the check and the open.
//
// The version of a file is "<size>-<mtime ns>-<inode>-<ctime ns>" (on
// Linux; elsewhere "<size>-<mtime ns>"). ReadAt checks it on the open file
// before and after reading, so a rewrite that moves any of them before or
// during the read is reported as ErrVersionChanged.
//
// Data-lake writers replace files by writing a temporary file and renaming
// it over the old one. That is always safe here: the new file is another
// inode, so its version differs even when size and mtime do not (a
// rename within one tick of the kernel's file clock, or on a file system
// with 1- or 2-second timestamps); an open file keeps reading the old
// inode, and the next open sees the new version. A replacement that
// restores the old mtime (cp -p, rsync -t) moves ctime, which user space
// cannot set. What the version cannot see: a write already in progress
// when the read starts (the kernel stamps mtime when a write begins, not
// when it ends) and several in-place writes within one tick of the file
// clock. Rewriting files in place under a running cache is not supported.
type FileStore struct {
	root     string // cleaned absolute root, as configured
	realRoot string // root with symlinks resolved
	dir      *os.Root
	mtimeVer bool // FileConfig.SizeMtimeVersions
}

// version is the version of a file with the given info (FileVersion, or
// size and mtime only with FileConfig.SizeMtimeVersions).
func (s *FileStore) version(fi fs.FileInfo) string {
	if s.mtimeVer {
		return strconv.FormatInt(fi.Size(), 10) + "-" + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
	}
	return FileVersion(fi)
}

// NewFileStore opens the root directory.
func NewFileStore(cfg FileConfig) (*FileStore, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("origin: cannot resolve file root %q: %w", cfg.Root, err)
	}
	dir, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("origin: cannot open file root %q: %w", cfg.Root, err)
	}
	return &FileStore{root: cfg.Root, realRoot: real, dir: dir, mtimeVer: cfg.SizeMtimeVersions}, nil
}

// Close releases the root directory handle.
func (s *FileStore) Close() error { return s.dir.Close() }

// Root returns the configured root directory.
func (s *FileStore) Root() string { return s.root }

// within returns p relative to root if p is root or below it.
func within(root, p string) (string, bool) {
	if p == root {
		return ".", true
	}
	prefix := root
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if rel, ok := strings.CutPrefix(p, prefix); ok {
		return rel, true
	}
	return "", false
}

// resolve maps a file URI to a path relative to the root, enforcing
// confinement. prefixOK allows a trailing "/".
func (s *FileStore) resolve(uri string, prefixOK bool) (URI, string, error) {
	u, err := ParseURI(uri)
	if err != nil {
		return URI{}, "", err
	}
	if u.Scheme != SchemeFile {
		return URI{}, "", fmt.Errorf("%w: the file store cannot serve %q", ErrUnsupportedScheme, uri)
	}
	if !prefixOK && u.IsPrefix() {
		return URI{}, "", fmt.Errorf("%w: %q ends in \"/\": name a file, not a directory", ErrInvalidURI, uri)
	}
	p := strings.TrimSuffix(u.Path, "/")
	if p == "" {
		p = "/"
	}
	rel, ok := within(s.root, p)
	if !ok {
		rel, ok = within(s.realRoot, p)
	}
	if !ok {
		return URI{}, "", fmt.Errorf("%w: %q is not under %s", ErrOutsideRoot, uri, s.root)
	}
	return u, rel, nil
}

// checkLinks resolves symbolic links in root/rel, verifies the result is
// still inside the root and returns it relative to the root, free of
// links. The store opens that path, not rel: os.Root refuses every
// absolute link target, also one inside the root (ln -s "$PWD/a" b), and
// it still confines the open if a link is swapped in meanwhile.
func (s *FileStore) checkLinks(uri, rel string) (string, error) {
	real, err := filepath.EvalSymlinks(filepath.Join(s.realRoot, rel))
	if err != nil {
		switch {
		case noSuchFile(err):
			return "", fmt.Errorf("%w: %s: %w", ErrNotFound, uri, err)
		case errors.Is(err, fs.ErrPermission):
			return "", fmt.Errorf("%w: %s: %w", ErrAccessDenied, uri, err)
		}
		return "", fmt.Errorf("origin: cannot resolve %q: %w", uri, err)
	}
	resolved, ok := within(s.realRoot, real)
	if !ok {
		return "", fmt.Errorf("%w: %q resolves through a symbolic link to %s", ErrOutsideRoot, uri, real)
	}
	return resolved, nil
}

func (s *FileStore) open(uri string) (*os.File, error) {
	_, rel, err := s.resolve(uri, false)
	if err != nil {
		return nil, err
	}
	resolved, err := s.checkLinks(uri, rel)
	if err != nil {
		return nil, err
	}
	f, err := s.dir.OpenFile(resolved, openFlags, 0)
	if err != nil {
		return nil, s.mapErr(uri, err)
	}
	return f, nil
}

// noSuchFile reports a lookup error that means no file has the name: it
// does not exist, a component is a regular file (a directory replaced by
// a file), a component is longer than the file system allows, or symbolic
// links loop (filepath.EvalSymlinks says so in a plain error).
func noSuchFile(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) ||
		errors.Is(err, syscall.ENAMETOOLONG) || errors.Is(err, syscall.ELOOP) ||
		strings.Contains(err.Error(), "too many links")
}

func (s *FileStore) mapErr(uri string, err error) error {
	switch {
	case noSuchFile(err):
		return fmt.Errorf("%w: %s", ErrNotFound, uri)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %s: %w", ErrAccessDenied, uri, err)
	case strings.Contains(err.Error(), "path escapes from parent"):
		// os.Root's own confinement (its sentinel is unexported).
		return fmt.Errorf("%w: %s: %w", ErrOutsideRoot, uri, err)
	}
	return fmt.Errorf("origin: cannot read %s: %w", uri, err)
}

// testHookAfterRead, when set by a test, runs between a read and the
// version check that follows it.
var testHookAfterRead func()

// FileVersion formats the version of a file with the given info.
func FileVersion(fi fs.FileInfo) string {
	return strconv.FormatInt(fi.Size(), 10) + "-" + strconv.FormatInt(fi.ModTime().UnixNano(), 10) + fileIdentity(fi)
}

func (s *FileStore) info(uri string, f *os.File) (Info, error) {
	fi, err := f.Stat()
	if err != nil {
		return Info{}, s.mapErr(uri, err)
	}
	if !fi.Mode().IsRegular() {
		return Info{}, fmt.Errorf("%w: %s is not a regular file", ErrNotFound, uri)
	}
	return Info{URI: uri, Size: fi.Size(), Version: s.version(fi), ModTime: fi.ModTime()}, nil
}

// Stat implements Store.
func (s *FileStore) Stat(ctx context.Context, uri string) (Info, error) {
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	f, err := s.open(uri)
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	return s.info(uri, f)
}

// ReadAt implements Store.
func (s *FileStore) ReadAt(ctx context.Context, uri, version string, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%w: offset %d of %s", ErrRange, off, uri)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	f, err := s.open(uri)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	before, err := s.info(uri, f)
	if err != nil {
		return 0, err
	}
	if version != "" && before.Version != version {
		return 0, fmt.Errorf("%w: %s is at version %s, not %s", ErrVersionChanged, uri, before.Version, version)
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, rerr := f.ReadAt(p, off)
	if testHookAfterRead != nil {
		testHookAfterRead()
	}
	after, err := s.info(uri, f)
	if err != nil {
		return 0, err
	}
	if after.Version != before.Version {
		return 0, fmt.Errorf("%w: %s changed during the read (version %s, then %s)", ErrVersionChanged, uri, before.Version, after.Version)
	}
	if rerr != nil && rerr != io.EOF {
		return n, fmt.Errorf("origin: cannot read %s at %d: %w", uri, off, rerr)
	}
	return n, rerr
}

// List implements Store. Objects are regular files (symbolic links are
// followed when they stay inside the root, and skipped otherwise);
// directories are walked recursively in lexical order per directory, which
// is deterministic but not always S3's byte order of whole keys.
func (s *FileStore) List(ctx context.Context, prefix string, fn func(Info) error) error {
	u, _, err := s.resolve(prefix, true)
	if err != nil {
		return err
	}
	// The walk starts at the deepest directory the prefix names in full.
	dirPath := u.Path[:strings.LastIndex(u.Path, "/")+1] // ends in "/"
	startPath := strings.TrimSuffix(dirPath, "/")
	if startPath == "" {
		startPath = "/"
	}
	rel, ok := within(s.root, startPath)
	base := s.root
	if !ok {
		rel, ok = within(s.realRoot, startPath)
		base = s.realRoot
	}
	if !ok {
		// The prefix names the root itself without its "/"
		// (file:///data/lake for root /data/lake; resolve refuses a
		// partial component such as file:///data/la, as it does the
		// root's parent): walk the whole root, naming the files as the
		// prefix names the root (either spelling of a root that is a
		// symbolic link).
		rel, base = ".", s.root
		if !strings.HasPrefix(s.root+"/", u.Path) {
			base = s.realRoot
		}
	}
	if _, err := s.checkLinks(prefix, rel); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil // nothing under a prefix that does not exist
		}
		return err
	}
	fsys := s.dir.FS()
	return fs.WalkDir(fsys, rel, func(name string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if noSuchFile(err) {
				return nil // removed (or replaced by a file) while walking
			}
			if errors.Is(err, fs.ErrPermission) {
				return fmt.Errorf("%w: cannot list %s: %w", ErrAccessDenied, prefix, err)
			}
			return fmt.Errorf("origin: cannot list %s: %w", prefix, err)
		}
		full := path.Join(base, name)
		if d.IsDir() {
			// Prune directories that cannot hold a match.
			dir := full + "/"
			if full == "/" {
				dir = "/"
			}
			if !strings.HasPrefix(dir, u.Path) && !strings.HasPrefix(u.Path, dir) {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(full, u.Path) {
			return nil
		}
		fi, err := fs.Stat(fsys, name) // follows links inside the root only
		if err != nil && d.Type()&fs.ModeSymlink != 0 {
			// An absolute link target, which os.Root refuses: resolve
			// it as open does.
			if resolved, lerr := s.checkLinks(full, name); lerr == nil {
				fi, err = fs.Stat(fsys, resolved)
			}
		}
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		uri := URI{Scheme: SchemeFile, Path: full}.String()
		return fn(Info{URI: uri, Size: fi.Size(), Version: s.version(fi), ModTime: fi.ModTime()})
	})
}
