//go:build !cgo

// cordon needs cgo: libseccomp (through libseccomp-golang) builds its
// seccomp filters, and the session init forks in C. Every other file of
// this package builds only with cgo, so a CGO_ENABLED=0 build compiles
// this file alone and stops at the undefined name below, which says what
// to install:
//
//	Debian/Ubuntu: sudo apt-get install gcc libseccomp-dev pkg-config
//	Fedora:        sudo dnf install gcc libseccomp-devel pkgconf
//	then:          CGO_ENABLED=1 go install github.com/cordon-sandbox/cordon/cmd/cordon@latest
package main

func main() {
	cordon_needs_cgo_install_gcc_and_libseccomp_dev_then_build_with_CGO_ENABLED_1()
}
