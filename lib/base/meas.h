/*
 * meas: the outcome codes of one measurement, shared by the harness that
 * produces them and the store that keeps them. Codes 0-8 are AutoTVM's
 * MeasureErrorNo numbers, so logs translate one to one; 9 and up are
 * tunekit's own (its measuring child's confinement) and have no AutoTVM
 * counterpart. In lib/base, under both measure and store, so neither
 * includes the other for them.
 */
#ifndef TK_MEAS_H
#define TK_MEAS_H

enum {
	MEAS_OK = 0,
	MEAS_INVALID_CONFIG = 1,  /* not in the space, or fails a constraint */
	MEAS_COMPILE_ERROR = 2,   /* the C compiler failed (AutoTVM COMPILE_HOST) */
	MEAS_COMPILE_DEVICE = 3,  /* device-side compile error; only in imported logs */
	MEAS_RUNTIME_CRASH = 4,   /* signal, abnormal exit, or missing symbol */
	MEAS_WRONG_ANSWER = 5,    /* output differs from the reference */
	MEAS_COMPILE_TIMEOUT = 6, /* AutoTVM BUILD_TIMEOUT */
	MEAS_RUN_TIMEOUT = 7,
	MEAS_UNKNOWN = 8,
	MEAS_AUTOTVM_LAST = MEAS_UNKNOWN, /* the last code AutoTVM has */
	MEAS_MEMORY_LIMIT = 9,    /* asked for more memory than the child may have */
	MEAS_FORBIDDEN = 10,      /* a forbidden system call (fork, exec, kill, ...) */
	MEAS_NERROR
};

/* "none", "invalid config", "compile error", "device compile error",
 * "runtime crash", "wrong answer", "compile timeout", "run timeout",
 * "unknown", "memory limit", "forbidden syscall"; "?" otherwise. */
const char *meas_error_name(int code);
/* Inverse of meas_error_name (also accepts the AutoTVM names such as
 * "COMPILE_HOST", and MEMORY_LIMIT and FORBIDDEN_SYSCALL); -1 if unknown. */
int meas_error_parse(const char *name);

#endif
