// Our own small program (main.go) on the CDI library a container runtime uses: it applies CDI specs to an OCI
// runtime spec, so the e2e tier can compare what our device plugin's spec and NVIDIA's inject into a container.
module local/e2e/cdi-apply

go 1.26.0

require (
	github.com/opencontainers/runtime-spec v1.3.0
	tags.cncf.io/container-device-interface v1.1.1
)

require (
	github.com/fsnotify/fsnotify v1.7.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.19.0 // indirect
	tags.cncf.io/container-device-interface/specs-go v1.1.1 // indirect
)
