// Package agent knows the coding agents cordon puts under its sandbox:
// Claude Code, Codex, Gemini CLI and Cursor. It reads each agent's
// pre-tool-use hook payload (Parse), writes the answer in that agent's
// format with the exit code the agent defines (Answer.Encode), and merges
// cordon's hook into the agent's settings file (Install, Remove).
//
// It decides nothing: "cordon hook" decides with the policy and the
// daemon, and this package only speaks the agents' formats. It imports the
// standard library only. Whatever it cannot read is an error the caller
// answers with a deny (fail closed); it never turns bad input into an
// allow.
package agent
