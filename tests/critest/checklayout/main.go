// Command checklayout checks the images tests/critest/make-images.py
// builds, on the host, before the guest pushes them: each argument is an OCI
// image layout directory holding one image, which go-containerregistry (the
// library crane pushes with) must read and validate (every blob's digest and
// size, every layer's diff_id). It prints the manifest digest, the user and
// the command of each. Its own module, so that maka's go.mod does not carry
// go-containerregistry.
package main

import (
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

func check(dir string) error {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	if len(m.Manifests) != 1 {
		return fmt.Errorf("%d manifests, want 1", len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		return err
	}
	if err := validate.Image(img); err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	fmt.Printf("%s: %s user %q entrypoint %q cmd %q\n", dir, m.Manifests[0].Digest,
		cf.Config.User, cf.Config.Entrypoint, cf.Config.Cmd)
	return nil
}

func main() {
	bad := 0
	for _, dir := range os.Args[1:] {
		if err := check(dir); err != nil {
			fmt.Fprintf(os.Stderr, "checklayout: %s: %v\n", dir, err)
			bad++
		}
	}
	if bad > 0 {
		os.Exit(1)
	}
}
