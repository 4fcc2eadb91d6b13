module github.com/cordon-sandbox/cordon

go 1.24.0

require (
	github.com/bmatcuk/doublestar/v4 v4.10.4
	github.com/landlock-lsm/go-landlock v0.10.1
	github.com/seccomp/libseccomp-golang v0.11.1
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	github.com/stretchr/testify v1.12.1
	go.starlark.net v0.0.0-20251109183026-be02852a5e1f
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/sys v0.40.0
	kernel.org/pub/linux/libs/security/libcap/cap v1.2.77
	mvdan.cc/sh/v3 v3.12.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.77 // indirect
)
