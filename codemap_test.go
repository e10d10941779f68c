package switchboard

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCodeMapNamesEveryPackage: the README's code map has a line for every top-level
// directory holding Go code, so a newcomer's map never misses a package.
func TestCodeMapNamesEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, codeMap, ok := strings.Cut(string(readme), "\n## Code map\n")
	if !ok {
		t.Fatal("README.md has no Code map section")
	}
	if next := strings.Index(codeMap, "\n## "); next >= 0 {
		codeMap = codeMap[:next]
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || !holdsGo(t, e.Name()) {
			continue
		}
		if !strings.Contains(codeMap, "| `"+e.Name()+"/` |") {
			t.Errorf("the README's code map has no line for %s/", e.Name())
		}
	}
}

func holdsGo(t *testing.T, dir string) bool {
	found := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		found = !d.IsDir() && strings.HasSuffix(path, ".go")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
