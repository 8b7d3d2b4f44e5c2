/*
 * meas: names of measurement outcome codes (see meas.h).
 */
#include "meas.h"

#include <string.h>
#include <strings.h>

static const char *const names[MEAS_NERROR] = {
	"none", "invalid config", "compile error", "device compile error",
	"runtime crash", "wrong answer", "compile timeout", "run timeout",
	"unknown", "memory limit", "forbidden syscall",
};

/* AutoTVM's MeasureErrorNo names, in code order, then names in their style
 * for tunekit's own codes. */
static const char *const tvm_names[MEAS_NERROR] = {
	"NO_ERROR", "INSTANTIATION_ERROR", "COMPILE_HOST", "COMPILE_DEVICE",
	"RUNTIME_DEVICE", "WRONG_ANSWER", "BUILD_TIMEOUT", "RUN_TIMEOUT",
	"UNKNOWN_ERROR", "MEMORY_LIMIT", "FORBIDDEN_SYSCALL",
};

const char *meas_error_name(int code)
{
	if (code < 0 || code >= MEAS_NERROR)
		return "?";
	return names[code];
}

int meas_error_parse(const char *name)
{
	for (int i = 0; i < MEAS_NERROR; i++)
		if (!strcasecmp(name, names[i]) || !strcasecmp(name, tvm_names[i]))
			return i;
	return -1;
}
