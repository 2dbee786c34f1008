//go:build !unix

package session

import (
	"fmt"
	"os"
	"path/filepath"
)

// openBeneath opens rel (a clean relative path) below root. Without openat
// (Windows and other systems that are not Unix) it resolves the path and
// checks it is below root before opening it by name; unlike the Unix
// versions that is not atomic against a concurrent swap of a path
// component.
func openBeneath(root, rel string) (*os.File, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, rel))
	if err != nil {
		return nil, err
	}
	if !below(realRoot, real) {
		return nil, fmt.Errorf("%s leads outside the working directory", filepath.Join(root, rel))
	}
	return os.Open(real)
}
