package ociimage

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"time"
)

// Paths and identities the Helm chart relies on.
const (
	// BinDir holds the daemons; it is first on the image's PATH, so the
	// chart's command: ["cachenode"] / ["scheduler"] find them.
	BinDir = "/usr/local/bin"
	// CABundlePath is where the CA certificates go: the first place Go's
	// crypto/x509 looks on Linux, and SSL_CERT_FILE names it as well.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// NonRootID is the uid and gid of the `nonroot` user the image runs
	// as: the chart's runAsUser and fsGroup.
	NonRootID = 65532
	// ImagePath is the image's PATH.
	ImagePath = "/usr/local/bin:/usr/bin:/bin"
)

// Sentinel errors of [Locus.Spec], wrapped with the offending file.
var (
	// ErrNotStatic: the binary asks for a dynamic loader, which the
	// image does not have; build it with CGO_ENABLED=0.
	ErrNotStatic = errors.New("not a statically linked executable")
	// ErrWrongArch: the binary is not a Linux executable for the image's
	// architecture; build it with GOOS=linux GOARCH=<arch>.
	ErrWrongArch = errors.New("not an executable for the image's architecture")
)

// Locus describes the image of both daemons.
type Locus struct {
	// Cachenode and Scheduler are the paths of the built binaries
	// (CGO_ENABLED=0 GOOS=linux GOARCH=Arch).
	Cachenode, Scheduler string
	// CABundle is the host file copied to CABundlePath. Default:
	// CABundlePath (Debian's and Alpine's bundle).
	CABundle string
	// Arch is amd64 or arm64.
	Arch string
	// Version, Revision and Source fill the OCI labels
	// org.opencontainers.image.version/revision/source; empty ones are
	// left out.
	Version, Revision, Source string
	// Created is every file's time and the image's creation time (see
	// Spec.Created): use the commit time for reproducible builds.
	Created time.Time
}

// elfMachines maps the supported architectures to their ELF machine.
var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64,
	"arm64": elf.EM_AARCH64,
}

// Spec reads the binaries and the CA bundle and returns the image's
// Spec. It fails with ErrNotStatic or ErrWrongArch (wrapped, naming the
// file) for a binary that could not run in the image.
func (l Locus) Spec() (Spec, error) {
	machine, ok := elfMachines[l.Arch]
	if !ok {
		return Spec{}, fmt.Errorf("%w: architecture %q: want amd64 or arm64", ErrBadSpec, l.Arch)
	}
	caPath := l.CABundle
	if caPath == "" {
		caPath = CABundlePath
	}
	ca, err := os.ReadFile(caPath)
	if err != nil {
		return Spec{}, fmt.Errorf("cannot read the CA bundle: %w (install ca-certificates, or pass another bundle)", err)
	}
	files := []File{
		{Path: CABundlePath, Mode: 0o644, Data: ca},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Path: "/etc/group", Mode: 0o644, Data: []byte(group)},
		{Path: "/etc/nsswitch.conf", Mode: 0o644, Data: []byte("hosts: files dns\n")},
	}
	for _, b := range []struct{ name, file string }{{"cachenode", l.Cachenode}, {"scheduler", l.Scheduler}} {
		data, err := readStatic(b.file, machine)
		if err != nil {
			return Spec{}, err
		}
		files = append(files, File{Path: BinDir + "/" + b.name, Mode: 0o755, Data: data})
	}
	labels := map[string]string{}
	for k, v := range map[string]string{
		"org.opencontainers.image.version":  l.Version,
		"org.opencontainers.image.revision": l.Revision,
		"org.opencontainers.image.source":   l.Source,
	} {
		if v != "" {
			labels[k] = v
		}
	}
	return Spec{
		Files:        files,
		OS:           "linux",
		Architecture: l.Arch,
		Created:      l.Created,
		User:         fmt.Sprintf("%d:%d", NonRootID, NonRootID),
		Env:          []string{"PATH=" + ImagePath, "SSL_CERT_FILE=" + CABundlePath},
		WorkingDir:   "/",
		Cmd:          []string{"cachenode", "--help"},
		Labels:       labels,
		CreatedBy:    "locus internal/ociimage (scripts/build-image.sh)",
	}, nil
}

// passwd and group name root and the nonroot user the daemons run as, so
// that tools and libraries looking the uid up find a name. Home is / as
// the root file system is read-only anyway.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nonroot:x:65532:\n"
)

// readStatic reads file and checks that it is a statically linked Linux
// executable for machine.
func readStatic(file string, machine elf.Machine) ([]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("cannot read the binary: %w", err)
	}
	if err := CheckStatic(data, machine); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return data, nil
}

// CheckStatic returns nil if data is a Linux ELF executable for machine
// with no program interpreter (PT_INTERP), i.e. one that runs without a
// dynamic loader or shared libraries; ErrWrongArch or ErrNotStatic
// otherwise.
func CheckStatic(data []byte, machine elf.Machine) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%w: not an ELF file (%v); build it with GOOS=linux", ErrWrongArch, err)
	}
	defer f.Close()
	// ET_DYN too: a static-pie build (-buildmode=pie) has no PT_INTERP.
	if f.Machine != machine || (f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN) {
		return fmt.Errorf("%w: ELF %v %v, want an executable for %v; build it with GOOS=linux and the image's GOARCH",
			ErrWrongArch, f.Type, f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%w: it needs a dynamic loader (PT_INTERP); build it with CGO_ENABLED=0", ErrNotStatic)
		}
	}
	return nil
}
