//go:build !race

package runner

// initEnv is the environment the init starts with: none. The command's
// own travels over the control socket (configMsg.Env).
func initEnv() []string { return []string{} }
