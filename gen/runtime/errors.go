package runtime

import "fmt"

// ScriptError is an error reply whose first word is an @error code of the
// package. Its Unwrap returns the code's sentinel, so errors.Is(err, ErrX)
// works.
type ScriptError struct {
	Script  string // the script's file name
	Code    string // the first word of the reply, e.g. BADARG
	Message string // the rest of the reply
}

func (e *ScriptError) Error() string { return e.Script + ": " + e.Code + " " + e.Message }

// Unwrap returns the sentinel of e.Code.
func (e *ScriptError) Unwrap() error { return errorCodes[e.Code] }

// ReplyError reports a reply whose shape differs from the script's header,
// or a value that does not fit the declared Go type or bounds.
type ReplyError struct {
	Script  string
	Element int    // 1-based, as in Lua; 0 for the reply as a whole
	Name    string // the @return name of the element
	Want    string
	Got     string
}

func (e *ReplyError) Error() string {
	if e.Element == 0 {
		return fmt.Sprintf("%s: reply: want %s, got %s", e.Script, e.Want, e.Got)
	}
	return fmt.Sprintf("%s: reply element %d (%s): want %s, got %s", e.Script, e.Element, e.Name, e.Want, e.Got)
}

// ArgError reports a parameter that cannot be sent as the script expects:
// out of its bounds, not one of its words, or not a whole number of its
// unit. Nothing is sent to Redis when a call has one.
type ArgError struct {
	Script string
	Arg    string // the @arg name
	Value  string
	Reason string
}

func (e *ArgError) Error() string {
	return fmt.Sprintf("%s: argument %s: %s %s", e.Script, e.Arg, e.Value, e.Reason)
}
