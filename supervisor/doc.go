// Package supervisor decides, on the host, every execve/execveat made inside
// a sandbox, by answering seccomp user notifications.
//
// It owns the seccomp filter the sandbox installs (Filter), the notify loop
// (Supervisor.Run: ppoll on the listener and an eventfd, never blocking in
// SECCOMP_IOCTL_NOTIF_RECV), reading the caller's path and argv from its
// memory, and the decision step that asks the policy and answers CONTINUE or
// an errno. It must never start processes, touch the terminal or decide
// anything the policy did not say: if it goes away, the kernel fails every
// further exec in the sandbox (fail closed).
package supervisor
