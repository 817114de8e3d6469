// Command cdi-apply injects CDI devices into an OCI runtime spec the way a container runtime does, with the CDI
// library (tags.cncf.io/container-device-interface): it loads every spec in the given directories, injects the
// named devices into the OCI spec read from stdin and prints the edited spec as JSON on stdout. The e2e tier uses
// it to show what a container asking for a device gets from a CDI spec.
//
// Usage: cdi-apply -spec-dir DIR [-spec-dir DIR ...] vendor/class=name [...] < config.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

type dirs []string

func (d *dirs) String() string     { return strings.Join(*d, ",") }
func (d *dirs) Set(v string) error { *d = append(*d, v); return nil }

func run() error {
	var specDirs dirs
	flag.Var(&specDirs, "spec-dir", "a directory of CDI specs (repeatable)")
	flag.Parse()
	if len(specDirs) == 0 || flag.NArg() == 0 {
		return fmt.Errorf("usage: cdi-apply -spec-dir DIR [-spec-dir DIR ...] vendor/class=name [...] < config.json")
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(specDirs...), cdi.WithAutoRefresh(false))
	if err != nil {
		return fmt.Errorf("loading the CDI specs: %w", err)
	}
	for path, errs := range cache.GetErrors() {
		for _, e := range errs {
			fmt.Fprintf(os.Stderr, "cdi-apply: %s: %v\n", path, e)
		}
	}
	var spec oci.Spec
	if err := json.NewDecoder(os.Stdin).Decode(&spec); err != nil {
		return fmt.Errorf("reading the OCI spec from stdin: %w", err)
	}
	unresolved, err := cache.InjectDevices(&spec, flag.Args()...)
	if err != nil {
		return fmt.Errorf("injecting %v (unresolved: %v): %w", flag.Args(), unresolved, err)
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	return out.Encode(&spec)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cdi-apply:", err)
		os.Exit(1)
	}
}
