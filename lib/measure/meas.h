/*
 * meas: the outcome codes of one measurement, shared by the harness that
 * produces them and the store that keeps them. They follow AutoTVM's
 * MeasureErrorNo so logs translate one to one.
 */
#ifndef TK_MEAS_H
#define TK_MEAS_H

enum {
	MEAS_OK = 0,
	MEAS_INVALID_CONFIG = 1,  /* the config is not in the space or fails a constraint */
	MEAS_COMPILE_ERROR = 2,
	MEAS_COMPILE_TIMEOUT = 3,
	MEAS_RUNTIME_CRASH = 4,   /* signal, abnormal exit, or missing symbol */
	MEAS_RUN_TIMEOUT = 5,
	MEAS_WRONG_ANSWER = 6,    /* output differs from the reference */
	MEAS_UNKNOWN = 7,
	MEAS_NERROR
};

/* "none", "invalid config", "compile error", "compile timeout",
 * "runtime crash", "run timeout", "wrong answer", "unknown"; "?" otherwise. */
const char *meas_error_name(int code);
/* Inverse of meas_error_name (also accepts the AutoTVM names such as
 * "COMPILE_HOST"); -1 if unknown. */
int meas_error_parse(const char *name);

#endif
