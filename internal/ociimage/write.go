package ociimage

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ParseTag parses an image reference with a tag, such as
// ghcr.io/locuscache/locus:0.1.0 (a name without a registry means Docker
// Hub), refusing one without an explicit tag, which would silently mean
// :latest.
func ParseTag(ref string) (name.Tag, error) {
	const want = "want e.g. ghcr.io/locuscache/locus:0.1.0"
	if !strings.Contains(ref[strings.LastIndex(ref, "/")+1:], ":") {
		return name.Tag{}, fmt.Errorf("image reference %q has no tag (%s)", ref, want)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image reference %q: %w (%s)", ref, err, want)
	}
	return tag, nil
}

// WriteDockerArchive writes img to file as a `docker save` style tarball
// (manifest.json plus blobs) under the name tag: `docker load -i file`,
// `podman load -i file`, `crane push file REF` and
// `skopeo copy docker-archive:file docker://REF` read it.
func WriteDockerArchive(file string, tag name.Tag, img v1.Image) error {
	if err := tarball.WriteToFile(file, tag, img); err != nil {
		return fmt.Errorf("cannot write the image to %s: %w", file, err)
	}
	return nil
}

// WriteOCILayout writes img into dir as an OCI image layout (oci-layout,
// index.json, blobs/), its index entry annotated with the tag as
// org.opencontainers.image.ref.name: `skopeo copy oci:dir:TAG ...`,
// `podman pull oci:dir:TAG` and `crane push dir REF` read it. Build img
// with Spec.OCI: oci: readers of podman 4's generation find a tag only on
// an OCI manifest. An existing index.json in dir is replaced.
func WriteOCILayout(dir string, tag name.Tag, img v1.Image) error {
	if mt, err := img.MediaType(); err != nil || mt != types.OCIManifestSchema1 {
		return fmt.Errorf("%w: an OCI layout needs an image with OCI media types (Spec.OCI), not %q", ErrBadSpec, mt)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("cannot create the OCI layout %s: %w", dir, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("cannot read the image config: %w", err)
	}
	ann := map[string]string{"org.opencontainers.image.ref.name": tag.TagStr()}
	plat := v1.Platform{OS: cf.OS, Architecture: cf.Architecture}
	if err := p.AppendImage(img, layout.WithAnnotations(ann), layout.WithPlatform(plat)); err != nil {
		return fmt.Errorf("cannot write the image to the OCI layout %s: %w", dir, err)
	}
	return nil
}

// WriteLocus is what scripts/build-image.sh runs (through cmd/mkimage):
// it builds the image l describes, writes it to the docker archive out
// and, if ociDir is not empty, to an OCI layout there (the same image
// with OCI media types), printing progress to log. It returns the docker
// archive's image digest, the one a registry gets from `crane push`.
func WriteLocus(l Locus, tag name.Tag, out, ociDir string, log io.Writer) (v1.Hash, error) {
	spec, err := l.Spec()
	if err != nil {
		return v1.Hash{}, err
	}
	fmt.Fprintf(log, "building %s for linux/%s (%d files, created %s)\n",
		tag, l.Arch, len(spec.Files), spec.Created.UTC().Format(time.RFC3339))
	img, err := Build(spec)
	if err != nil {
		return v1.Hash{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("cannot compute the image digest: %w", err)
	}
	fmt.Fprintf(log, "writing %s\n", out)
	if err := WriteDockerArchive(out, tag, img); err != nil {
		return v1.Hash{}, err
	}
	if ociDir != "" {
		// The same image with OCI media types (see Spec.OCI): another
		// manifest, so another digest.
		spec.OCI = true
		oimg, err := Build(spec)
		if err != nil {
			return v1.Hash{}, err
		}
		od, err := oimg.Digest()
		if err != nil {
			return v1.Hash{}, fmt.Errorf("cannot compute the OCI image digest: %w", err)
		}
		fmt.Fprintf(log, "writing OCI layout %s (OCI media types, digest %s)\n", ociDir, od)
		if err := WriteOCILayout(ociDir, tag, oimg); err != nil {
			return v1.Hash{}, err
		}
	}
	return digest, nil
}
