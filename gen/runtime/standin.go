package runtime

import (
	"errors"

	"github.com/redis/go-redis/v9"
)

// What luagen generates per package, for two scripts, so that the runtime
// builds and is tested here: echo.lua returns its arguments (or the error
// reply its first argument names), peek.lua (@flags no-writes) returns
// GET of its key. luagen does not emit this file.

// ErrBadArg matches, with errors.Is, a *ScriptError with code BADARG.
var ErrBadArg = errors.New("BADARG")

var errorCodes = map[string]error{
	"BADARG": ErrBadArg,
}

var allScripts = []*scriptMeta{
	echoInfo,
	peekInfo,
}

const echoSource = `if ARGV[1] == 'fail' then return redis.error_reply(ARGV[2]) end
return ARGV`

const peekSource = `return redis.call('GET', KEYS[1])`

var echoInfo = &scriptMeta{file: "echo.lua", script: redis.NewScript(echoSource)}

var peekInfo = &scriptMeta{file: "peek.lua", script: redis.NewScript(peekSource), readOnly: true}

// FunctionsLibrary is the name of the Redis Functions library that holds
// every script of the package as one function.
const FunctionsLibrary = "standin"

// functionOf maps each script to its function in the library.
var functionOf = map[*scriptMeta]string{
	echoInfo: "standin_echo",
	peekInfo: "standin_peek",
}

const functionsCode = "#!lua name=standin\n" +
	"redis.register_function{function_name = 'standin_echo', callback = function(KEYS, ARGV)\n" + echoSource + "\nend}\n" +
	"redis.register_function{function_name = 'standin_peek', flags = {'no-writes'}, callback = function(KEYS, ARGV)\n" + peekSource + "\nend}\n"
