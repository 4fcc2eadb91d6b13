// Package shellcmd is cordon's one static reading of a shell command line:
// it parses a script with mvdan.cc/sh (a real POSIX/bash parser, never
// regular expressions) and lists the simple commands in it whose words are
// known before it runs, following sh -c inside sh -c. "cordon policy check"
// prints what it finds and "cordon hook" answers an agent with it.
//
// It never decides an exec that really happens: in a sandbox every command
// is decided by itself, by the supervisor, when it is exec'd. What a static
// reading cannot see (variables, command substitutions, eval, scripts,
// functions) is listed as such, so callers can say that it is decided at
// exec time.
package shellcmd
